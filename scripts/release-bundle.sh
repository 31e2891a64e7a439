#!/usr/bin/env bash
# Builds a release bundle, dist-release/door-agent-<version>-<arch>.tar.gz (npm run release): the program exactly as
# scripts/install.sh puts it in /opt/door-agent, with RELEASE.json first at its top ({version, arch, node_abi}: the
# version of its package.json, this machine's Debian architecture, the Node.js ABI its native addons are built for),
# then the Debian package of the same program, .package/door-agent_<version>_<arch>.deb (scripts/package-deb.sh), for
# the boards installed from the package. Sign it with `door-agent release sign --key release.key BUNDLE`; a board
# installs it with `door-agent update apply` (docs/fleet.md, "Signed updates").
#
#   scripts/release-bundle.sh                build from a clean copy of the tree (the dependencies as npm ci built them
#                                            are kept in .cache/package-build, shared with npm run package)
#   scripts/release-bundle.sh --rebuild      compile the dependencies even if unchanged
#   scripts/release-bundle.sh --program DIR  bundle a program already assembled (an installed /opt/door-agent): no build,
#                                            and no package unless --with-package
#   scripts/release-bundle.sh --with-package with --program: package it too (dpkg-dev; lintian if installed)
#   scripts/release-bundle.sh --no-package   leave the package out (boards installed from it then refuse the bundle)
#   scripts/release-bundle.sh --out DIR      write the bundle into DIR instead of dist-release/
set -euo pipefail
umask 022
CALLER=$(pwd)
cd "$(dirname "$0")/.."
SRC=$(pwd)
absolute() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$CALLER" "$1" ;; esac; }
PROG=release-bundle.sh
REBUILD=false
PROGRAM=
PACKAGE=
OUT=$SRC/dist-release
while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=true; shift ;;
    --program) PROGRAM=$(absolute "${2:?--program needs a directory}"); shift 2 ;;
    --with-package) PACKAGE=yes; shift ;;
    --no-package) PACKAGE=no; shift ;;
    --out) OUT=$(absolute "${2:?--out needs a directory}"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "release-bundle.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
BUILD_CACHE=$SRC/.cache/package-build # package-deb.sh's: a package and a release of one tree share one npm ci
say() { printf 'door-agent release: %s\n' "$*"; }
. "$SRC/scripts/build-program.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/door-agent-release.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
if [ -z "$PACKAGE" ]; then
  if [ -z "$PROGRAM" ]; then PACKAGE=yes; else PACKAGE=no; fi
fi
missing=$(missing_package_tool)
if [ "$PACKAGE" = yes ] && [ -n "$missing" ]; then
  echo "release-bundle.sh: the bundle carries the Debian package, and $missing is missing: sudo apt-get install -y dpkg-dev binutils (or --no-package: boards installed from the package then refuse the bundle)" >&2
  exit 1
fi
if [ -z "$PROGRAM" ]; then
  check_build_tools
  mkdir -p "$WORK/stage"
  build_in_stage "$WORK/stage"
  PROGRAM=$WORK/program
  assemble_program "$WORK/stage" "$PROGRAM"
else
  PROGRAM=$(cd "$PROGRAM" && pwd)
  require_assembled "$PROGRAM" 'give the directory install.sh made (/opt/door-agent)' package.json dist/cli/door-agent.js
fi

VERSION=$(node -p 'require(process.argv[1]).version' "$PROGRAM/package.json")
if command -v dpkg >/dev/null 2>&1; then
  ARCH=$(dpkg --print-architecture)
else
  ARCH=$(node -p '({ x64: "amd64", arm64: "arm64", arm: "armhf", ia32: "i386" })[process.arch] ?? process.arch')
fi
# The ABI the addons were built for, else this node's.
ABI=$(addon_abi "$PROGRAM")
ABI=${ABI:-$(node -p process.versions.modules)}
mkdir -p "$WORK/meta"
node -e 'process.stdout.write(JSON.stringify({ version: process.argv[1], arch: process.argv[2], node_abi: process.argv[3] }, null, 2) + "\n")' \
  "$VERSION" "$ARCH" "$ABI" > "$WORK/meta/RELEASE.json"

# The Debian package of the same program, for the boards installed from it (update apply installs it with dpkg).
META=(RELEASE.json)
if [ "$PACKAGE" = yes ]; then
  DEB_NAME=door-agent_${VERSION}_${ARCH}.deb
  bash "$SRC/scripts/package-deb.sh" --program "$PROGRAM" --out "$WORK/meta/.package"
  if [ ! -f "$WORK/meta/.package/$DEB_NAME" ]; then
    echo "release-bundle.sh: package-deb.sh did not write $DEB_NAME (the architectures of dpkg and of RELEASE.json differ?)" >&2
    exit 1
  fi
  META+=(.package)
  what="the program and its Debian package $DEB_NAME"
else
  what="the program only, no Debian package: boards installed from the package refuse it"
fi

mkdir -p "$OUT"
BUNDLE=$OUT/door-agent-$VERSION-$ARCH.tar.gz
# RELEASE.json first (a board reads it without unpacking the rest), the package, then the program (an older
# RELEASE.json or package in it left out); owned by root, in name order, without the time in the gzip header.
tar --format=gnu --owner=0 --group=0 --numeric-owner --sort=name -C "$WORK/meta" -cf - "${META[@]}" \
  -C "$PROGRAM" --anchored --exclude=./RELEASE.json --exclude=./.package . | gzip -n -6 > "$BUNDLE.tmp"
mv -f "$BUNDLE.tmp" "$BUNDLE"
say "built $BUNDLE ($(du -h "$BUNDLE" | cut -f1); version $VERSION, $ARCH, Node.js ABI $ABI; $what): sign it with door-agent release sign --key release.key $BUNDLE"
