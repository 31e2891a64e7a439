# Sourced by install.sh and package-deb.sh: the program built from a clean copy of the tree, as it runs on a door.
# The caller sets SRC (the tree), PROG (the script's name, for messages), REBUILD (true: never reuse the cache),
# BUILD_CACHE (where npm ci's result is kept between builds; empty: no cache) and defines say().
#
#   check_build_tools            everything the build needs, listed at once with the packages that bring it
#   build_in_stage STAGE         the sources copied into STAGE, npm ci (or the cache), npm run build, npm prune
#   assemble_program STAGE DEST  only what runs (plus the manuals, examples, units, self-test) into DEST
#   write_wrapper BIN NODE APP   the door-agent command: APP's program run by that node
#   require_assembled DIR HINT PATH...  exits naming the PATH an assembled program DIR lacks (a PATH ending in / is a directory)
#   addon_abi DIR                the Node.js ABI DIR's native addons are built for (empty if not found)
#   missing_package_tool         the first tool a Debian package's build needs that is missing (empty if none)
. "$SRC/scripts/node-headers.sh"

check_build_tools() {
  local missing=() apt=() node_version=none
  if command -v node >/dev/null 2>&1; then node_version=$(node --version); fi
  if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 10) ? 0 : 1)' 2>/dev/null; then
    missing+=("Node.js 20.10 or newer (found: $node_version). Debian 12 and Raspberry Pi OS Bookworm ship 18: install Node.js 22 (or 20) from NodeSource: curl -fsSL https://deb.nodesource.com/setup_22.x | sudo bash - && sudo apt-get install -y nodejs")
  fi
  if ! command -v npm >/dev/null 2>&1; then
    missing+=("npm (NodeSource's nodejs package includes it)")
  fi
  if ! command -v python3 >/dev/null 2>&1; then missing+=("python3 (node-gyp runs it)"); apt+=(python3); fi
  if ! command -v make >/dev/null 2>&1; then missing+=("make"); apt+=(make); fi
  if ! command -v "${CXX:-g++}" >/dev/null 2>&1 && ! command -v c++ >/dev/null 2>&1; then
    missing+=("a C++ compiler (g++)"); apt+=(g++)
  fi
  if [ "$node_version" != none ] && [ -z "${npm_config_nodedir:-}" ] && [ -z "$(node_headers_prefix)" ] && ! node_headers_cached; then
    missing+=("the Node.js $node_version headers (include/node/node.h beside $(command -v node)): NodeSource's nodejs installs them in /usr/include/node, as do the official tarballs and nvm under their prefix")
  fi
  if [ ${#missing[@]} -eq 0 ]; then return 0; fi
  {
    echo "$PROG: cannot build door-agent yet; missing:"
    printf '  - %s\n' "${missing[@]}"
    if [ ${#apt[@]} -gt 0 ]; then echo "Install the build tools with: sudo apt-get install -y ${apt[*]}   (or: build-essential python3)"; fi
  } >&2
  exit 1
}

# The source files: what git tracks plus new files not ignored (so work in progress counts), never node_modules,
# dist or build. Outside a git checkout (an unpacked release), the tree without those.
list_sources() {
  if command -v git >/dev/null 2>&1 && git -c safe.directory="$SRC" -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -c safe.directory="$SRC" -C "$SRC" ls-files -z -co --exclude-standard
  else
    (cd "$SRC" && find . \( -name .git -o -path ./node_modules -o -path ./dist -o -path ./build \) -prune -o \( -type f -o -type l \) -printf '%P\0')
  fi
}
copy_sources() {
  local file
  list_sources | while IFS= read -r -d '' file; do
    case "$file" in node_modules/*|dist/*|build/*) continue ;; esac
    if [ -e "$SRC/$file" ] || [ -L "$SRC/$file" ]; then printf '%s\0' "$file"; fi # a tracked file deleted in the work tree
  done | tar -C "$SRC" --null -T - -cf - | tar -C "$1" -xf -
}

# The native addons that must come through npm prune untouched (not removed, not rebuilt).
ADDONS=(build/Release/sd_notify.node build/Release/gpio_chardev.node build/Release/evdev.node build/Release/sched_policy.node
  node_modules/better-sqlite3/build/Release/better_sqlite3.node node_modules/epoll/build/Release/epoll.node)
addon_stamps() { (cd "$1" && for f in "${ADDONS[@]}"; do if [ -f "$f" ]; then stat -c '%n %Y %s' "$f"; sha256sum "$f"; else echo "$f missing"; fi; done) }

# What npm ci's result depends on: the lock file and manifest, our addons' sources, Node.js, the CPU, the headers.
build_key() {
  (
    cd "$1"
    sha256sum package.json package-lock.json binding.gyp $(find native -type f | sort)
    echo "node $(node --version) $(uname -m) headers ${npm_config_nodedir:-}"
  ) | sha256sum | cut -d' ' -f1
}
# Kept whole (a copy, not links: the installed program never shares files with the cache), replaced atomically.
save_build() {
  local stage=$1 key=$2 tmp=$BUILD_CACHE.tmp
  rm -rf "$tmp" && mkdir -p "$tmp"
  cp -a "$stage/node_modules" "$tmp/node_modules"
  cp -a "$stage/build/Release" "$tmp/Release"
  date -u +%Y-%m-%dT%H:%M:%SZ > "$tmp/built"
  echo "$key" > "$tmp/key"
  rm -rf "$BUILD_CACHE" && mv "$tmp" "$BUILD_CACHE"
}

build_in_stage() {
  local stage=$1 before addon key
  copy_sources "$stage"
  export_node_headers
  key=$(build_key "$stage")
  if ! $REBUILD && [ -n "$BUILD_CACHE" ] && [ -d "$BUILD_CACHE/node_modules" ] && [ "$(cat "$BUILD_CACHE/key" 2>/dev/null)" = "$key" ]; then
    say "dependencies, native code, Node.js and CPU unchanged since the build of $(cat "$BUILD_CACHE/built"): reusing its node_modules and addons (no npm ci; --rebuild compiles anyway)"
    cp -a "$BUILD_CACHE/node_modules" "$stage/node_modules"
    mkdir -p "$stage/build" && cp -a "$BUILD_CACHE/Release" "$stage/build/Release"
    (cd "$stage" && npm run build)
  else
    say "building in $stage (npm ci with the dev tools; the native addons compile: a few minutes on a Pi)"
    (
      cd "$stage"
      npm ci --no-audit --no-fund --prefer-offline
      npm run build
    )
    if [ -n "$BUILD_CACHE" ]; then save_build "$stage" "$key"; fi
  fi
  for addon in "${ADDONS[@]}"; do
    if [ ! -f "$stage/$addon" ]; then
      echo "$PROG: npm ci did not build the native addon $addon; see the output above" >&2
      exit 1
    fi
  done
  before=$(addon_stamps "$stage")
  (cd "$stage" && npm prune --omit=dev --no-audit --no-fund)
  if [ "$(addon_stamps "$stage")" != "$before" ]; then
    echo "$PROG: npm prune --omit=dev removed or rebuilt a native addon:" >&2
    diff <(printf '%s\n' "$before") <(addon_stamps "$stage") >&2 || true
    exit 1
  fi
}

# Only what runs (the built code, production node_modules, the addons) plus the manual, the examples, the units,
# the configuration's JSON Schema (when the tree has one) and the hardware self-test. DEST must not exist yet.
assemble_program() {
  local stage=$1 dest=$2
  mkdir -p "$dest/dist" "$dest/build/Release" "$dest/scripts"
  mv "$stage/dist/cli" "$dest/dist/cli"
  mv "$stage/node_modules" "$dest/node_modules"
  cp "$stage"/build/Release/*.node "$dest/build/Release/"
  cp -R "$stage/config" "$stage/systemd" "$stage/native" "$stage/docs" "$stage/examples" "$dest/"
  if [ -d "$stage/schema" ]; then cp -R "$stage/schema" "$dest/"; fi
  cp "$stage/scripts/hw-selftest.sh" "$dest/scripts/"
  cp "$stage/package.json" "$stage/package-lock.json" "$stage/README.md" "$stage/binding.gyp" "$dest/"
  {
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) with node $(node --version)"
    if git -c safe.directory="$SRC" -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
      echo "from: $SRC at $(git -c safe.directory="$SRC" -C "$SRC" describe --always --dirty)"
    else
      echo "from: $SRC"
    fi
  } > "$dest/INSTALLED"
  # The assembled program loads: the database and every addon, from where they now are.
  (cd "$dest" && node -e '
    const Database = require("better-sqlite3");
    new Database(":memory:").prepare("select 1").get();
    for (const addon of ["sd_notify", "gpio_chardev", "evdev", "sched_policy"]) require(`./build/Release/${addon}.node`);
  ') || { echo "$PROG: the assembled program in $dest does not load its native addons" >&2; exit 1; }
}

# The wrapper names the node the addons were built for (systemd's PATH may not find an nvm or /usr/local node).
write_wrapper() {
  local bin=$1 node=$2 app=$3
  cat > "$bin.tmp" <<WRAPPER
#!/bin/sh
exec "$node" "$app/dist/cli/door-agent.js" "\$@"
WRAPPER
  chmod 0755 "$bin.tmp" && mv -f "$bin.tmp" "$bin"
}

# An assembled program (scripts/install.sh's /opt/door-agent, release-bundle.sh's build): each PATH there, or the
# script stops, naming it and where to look instead (HINT).
require_assembled() {
  local dir=$1 hint=$2 path
  shift 2
  for path in "$@"; do
    case "$path" in
      */) [ -d "$dir/$path" ] && continue ;;
      *) [ -f "$dir/$path" ] && continue ;;
    esac
    echo "$PROG: $dir is not an assembled program (${path%/} is missing): $hint" >&2
    exit 1
  done
}

# better-sqlite3 registers itself as node_register_module_v<ABI>: the ABI of the Node.js that built the addons.
addon_abi() {
  grep -aoE 'node_register_module_v[0-9]+' "$1/node_modules/better-sqlite3/build/Release/better_sqlite3.node" 2>/dev/null | head -n 1 | sed 's/.*_v//' || true
}

# dpkg-deb builds the package, dpkg-shlibdeps finds the addons' libraries, strip trims the addons (dpkg-dev, binutils).
missing_package_tool() {
  local tool
  for tool in dpkg-deb dpkg-shlibdeps strip; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "$tool"
      return
    fi
  done
}
