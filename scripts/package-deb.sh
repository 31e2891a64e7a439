#!/usr/bin/env bash
# Builds the Debian package door-agent_<version>_<arch>.deb into dist-deb/ (npm run package), then checks it with
# lintian. The version is package.json's, the architecture this machine's (dpkg --print-architecture): the native
# addons are compiled here, so the package installs on boards of this architecture with a Node.js of this major
# version, and needs no compiler and no npm there.
#
#   scripts/package-deb.sh            build (the dependencies as npm ci built them are kept in .cache/package-build,
#                                     reused while package-lock.json, the native code, Node.js and the CPU are the same)
#   scripts/package-deb.sh --rebuild  compile the dependencies even if unchanged
#   scripts/package-deb.sh --program DIR  package a program already assembled (release-bundle.sh's build, an
#                                     installed /opt/door-agent): no build; the version is DIR's package.json's
#   scripts/package-deb.sh --out DIR  write the package into DIR instead of dist-deb/
#
# The program is built as scripts/install.sh builds it (scripts/build-program.sh: a clean copy of the files git
# lists, npm ci, npm run build, npm prune --omit=dev). The package's files come from debian/: control.in,
# changelog.in, copyright, lintian-overrides (each override with its reason), prerm, and postinst.in and postrm.in,
# into which scripts/system-setup.sh (the user, the directories, the configuration, as install.sh makes them) is
# copied where they say #SYSTEM_SETUP#. docs/debian-package.md is the manual.
set -euo pipefail
umask 022
CALLER=$(pwd)
cd "$(dirname "$0")/.."
SRC=$(pwd)
absolute() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$CALLER" "$1" ;; esac; }
PROG=package-deb.sh
REBUILD=false
PROGRAM=
OUT=$SRC/dist-deb
while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=true; shift ;;
    --program) PROGRAM=$(absolute "${2:?--program needs a directory}"); shift 2 ;;
    --out) OUT=$(absolute "${2:?--out needs a directory}"); shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "package-deb.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
BUILD_CACHE=$SRC/.cache/package-build
say() { printf 'door-agent package: %s\n' "$*"; }
. "$SRC/scripts/build-program.sh"

missing=$(missing_package_tool)
if [ -n "$missing" ]; then
  echo "package-deb.sh: $missing is missing: sudo apt-get install -y dpkg-dev binutils" >&2
  exit 1
fi
if [ -z "$PROGRAM" ]; then
  check_build_tools
else
  PROGRAM=$(cd "$PROGRAM" && pwd)
  require_assembled "$PROGRAM" 'give the directory install.sh or release-bundle.sh made' package.json dist/cli/door-agent.js README.md docs/
  # The package's Depends name this node's major version: the addons must be built for it.
  abi=$(addon_abi "$PROGRAM")
  if [ -n "$abi" ] && [ "$abi" != "$(node -p process.versions.modules)" ]; then
    echo "package-deb.sh: $PROGRAM's native addons are built for Node.js ABI $abi, this node ($(node --version)) is ABI $(node -p process.versions.modules): package it with the Node.js major version that built it" >&2
    exit 1
  fi
fi

VERSION=$(node -p 'require(process.argv[1]).version' "${PROGRAM:-$SRC}/package.json")
ARCH=$(dpkg --print-architecture)
DEB=$OUT/door-agent_${VERSION}_${ARCH}.deb
MAINTAINER=${DEB_MAINTAINER:-door-agent maintainers <door-agent@example.org>}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/door-agent-package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/stage
PKG=$WORK/root
APP=/usr/lib/door-agent
DOC=/usr/share/doc/door-agent
mkdir -p "$STAGE" "$PKG/DEBIAN" "$PKG/usr/bin" "$PKG/lib/systemd/system" "$PKG$DOC" "$PKG/usr/share/lintian/overrides"

if [ -z "$PROGRAM" ]; then
  build_in_stage "$STAGE"
  assemble_program "$STAGE" "$PKG$APP"
else
  mkdir -p "$(dirname "$PKG$APP")"
  cp -a "$PROGRAM" "$PKG$APP"
  # What a bundle's program may carry that is not the program: its release file, an older bundle's package.
  rm -rf "$PKG$APP/RELEASE.json" "$PKG$APP/.package"
fi

# What only a source tree needs goes: the units' copies (installed below), what node-gyp left beside the addons it
# built (object files, makefiles, intermediate copies: only build/Release/*.node loads), and the prebuilt addons
# for other systems and architectures.
rm -rf "$PKG$APP/systemd"
for gyp in "$PKG$APP"/node_modules/*/build/config.gypi "$PKG$APP"/node_modules/@*/*/build/config.gypi; do
  [ -f "$gyp" ] || continue
  find "$(dirname "$gyp")" -type f ! -path '*/build/Release/*.node' -delete
  find "$(dirname "$gyp")" -path '*/obj.target/*' -delete
  find "$(dirname "$gyp")" -depth -type d -empty -delete
done
find "$PKG$APP/node_modules" -path '*/build/Release/test_extension.node' -delete
node_arch=$(node -p process.arch)
find "$PKG$APP/node_modules" -type d -name prebuilds -prune -print0 | while IFS= read -r -d '' dir; do
  find "$dir" -mindepth 1 -maxdepth 1 -type d ! -name "linux-$node_arch" -exec rm -rf {} +
done
find "$PKG$APP/node_modules" -path '*/prebuilds/*' -name '*.musl.node' -delete
# The npm packages' own development files (linters', git's and npm's settings, CI): nothing loads them.
find "$PKG$APP/node_modules" -type d \( -name .github -o -name .husky -o -name .vscode \) -prune -exec rm -rf {} +
find "$PKG$APP/node_modules" -type f \( -name '.eslintrc*' -o -name .npmignore -o -name .gitattributes -o -name .gitignore \
  -o -name .editorconfig -o -name '.prettierrc*' -o -name .travis.yml \) -delete
find "$PKG$APP/node_modules" -mindepth 1 -depth -type d -empty -delete # the scopes npm prune emptied
# Modes as Debian has them: the addons stripped and not executable (dlopen needs no x bit), a file executable only
# if it is a script (#!), everything readable.
find "$PKG" -name '*.node' -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} + -exec chmod 0644 {} +
find "$PKG$APP/node_modules" -type f ! -name '*.node' -exec sh -c 'for f; do if [ "$(head -c 2 "$f")" = "#!" ]; then chmod 0755 "$f"; else chmod 0644 "$f"; fi; done' sh {} +

# The manual where Debian keeps it; the command, the units naming the package's paths.
mv "$PKG$APP/README.md" "$PKG$APP/docs" "$PKG$DOC/"
write_wrapper "$PKG/usr/bin/door-agent" /usr/bin/node "$APP"
for unit in door-agent.service door-agent-service.service door-agent-update.path door-agent-update.service; do
  sed -e 's|/usr/local/bin/door-agent|/usr/bin/door-agent|g' -e "s|file:///opt/door-agent/README.md|file://$DOC/README.md|" \
    "$SRC/systemd/$unit" > "$PKG/lib/systemd/system/$unit"
  if grep -nE '/usr/local|/opt/' "$PKG/lib/systemd/system/$unit" >&2; then
    echo "package-deb.sh: systemd/$unit names a path of install.sh's layout (above): teach package-deb.sh its place in the package" >&2
    exit 1
  fi
done
chmod 0644 "$PKG"/lib/systemd/system/*.service "$PKG"/lib/systemd/system/*.path

# Debian's files: the copyright, the changelog, lintian's overrides, the maintainer scripts.
cp "$SRC/debian/copyright" "$PKG$DOC/copyright"
date=$(date -R ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"})
sed -e "s|@VERSION@|$VERSION|g" -e "s|@MAINTAINER@|$MAINTAINER|" -e "s|@DATE@|$date|" "$SRC/debian/changelog.in" |
  gzip -9n > "$PKG$DOC/changelog.gz" # a native package's changelog (its version has no Debian revision)
cp "$SRC/debian/lintian-overrides" "$PKG/usr/share/lintian/overrides/door-agent"
with_system_setup() { awk -v shared="$SRC/scripts/system-setup.sh" '$0 == "#SYSTEM_SETUP#" { while ((getline line < shared) > 0) print line; next } { print }' "$1"; }
with_system_setup "$SRC/debian/postinst.in" > "$PKG/DEBIAN/postinst"
with_system_setup "$SRC/debian/postrm.in" > "$PKG/DEBIAN/postrm"
cp "$SRC/debian/prerm" "$PKG/DEBIAN/prerm"
chmod 0755 "$PKG/DEBIAN/postinst" "$PKG/DEBIAN/prerm" "$PKG/DEBIAN/postrm"

# Depends: a Node.js of the major version the addons were compiled for (their ABI), at least package.json's
# engines, and the shared libraries the addons link (dpkg-shlibdeps). Neither npm nor a compiler.
node_major=$(node -p 'process.versions.node.split(".")[0]')
engines_min=$(node -p 'require(process.argv[1]).engines.node.replace(/^>=\s*/, "")' "${PROGRAM:-$SRC}/package.json")
if [ "${engines_min%%.*}" = "$node_major" ]; then node_min=$engines_min; else node_min=$node_major; fi
mkdir -p "$WORK/shlibs/debian"
printf 'Source: door-agent\n\nPackage: door-agent\nArchitecture: any\n' > "$WORK/shlibs/debian/control"
mapfile -t addons < <(find "$PKG" -name '*.node' | sort)
shlibs=$(cd "$WORK/shlibs" && dpkg-shlibdeps --warnings=0 -O "${addons[@]/#/-e}" | sed -n 's/^shlibs:Depends=//p')
DEPENDS="nodejs (>= $node_min), nodejs (<< $((node_major + 1))), $shlibs"

installed_size=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@MAINTAINER@|$MAINTAINER|" -e "s|@INSTALLED_SIZE@|$installed_size|" \
  -e "s|@DEPENDS@|$DEPENDS|" "$SRC/debian/control.in" > "$PKG/DEBIAN/control"
(cd "$PKG" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$PKG/DEBIAN/md5sums"
chmod 0644 "$PKG/DEBIAN/control" "$PKG/DEBIAN/md5sums"

mkdir -p "$OUT"
dpkg-deb --build --root-owner-group -Zxz "$PKG" "$DEB.tmp" >/dev/null
mv -f "$DEB.tmp" "$DEB"
say "built $DEB ($(du -h "$DEB" | cut -f1); Depends: $DEPENDS)"

# lintian: errors fail the build; warnings are shown (each override in debian/lintian-overrides says why).
if command -v lintian >/dev/null 2>&1; then
  say "lintian $DEB"
  lintian --fail-on error "$DEB" || { echo "package-deb.sh: lintian found errors in $DEB (above)" >&2; exit 1; }
  say "lintian: no errors"
else
  say "lintian is not installed (sudo apt-get install -y lintian): the package was not checked"
fi
