#!/usr/bin/env bash
# Installs door-agent on Raspberry Pi OS / Debian as a hardened systemd service. Idempotent: run it again to
# upgrade; an existing /etc/door-agent/config.yaml is never overwritten.
#
#   sudo scripts/install.sh                 install or upgrade: build from a clean copy, then switch (see below)
#   sudo scripts/install.sh --with-service  also the reference access-control service unit
#   sudo scripts/install.sh --rollback      go back to the previous version (/opt/door-agent.prev), and again forward
#   sudo scripts/install.sh --uninstall     remove the program and units (keeps /etc/door-agent and the data)
#   sudo scripts/install.sh --uninstall --purge   also remove the configuration and the data
#   sudo scripts/install.sh --rebuild       install or upgrade, compiling the dependencies even if unchanged
#   scripts/install.sh --root DIR           into a throwaway root (tests): no users, no systemctl
#
# The build happens in a staging directory (/var/tmp/door-agent-build.*) from the files git tracks (or, outside a
# git checkout, the tree without node_modules, dist and build): npm ci with the dev tools, npm run build, npm prune
# --omit=dev. Only what runs goes to /opt/door-agent.new. Then, if door-agent.service is running, it is stopped
# (its ExecStopPost locks every relay), /opt/door-agent becomes /opt/door-agent.prev, the new one takes its
# place, and the service starts again. The dependencies as npm ci built them (with the native addons) are kept in
# /var/cache/door-agent/build: an upgrade whose package-lock.json, native code, Node.js and CPU are the same reuses
# them instead of compiling again (tens of minutes on a small Pi); --rebuild compiles anyway.
set -euo pipefail
umask 022 # the program must be readable by the door-agent user whatever root's umask is (secrets get explicit modes)
cd "$(dirname "$0")/.."
SRC=$(pwd)
. "$SRC/scripts/node-headers.sh"

ROOT=/
UNINSTALL=false
PURGE=false
WITH_SERVICE=false
ROLLBACK=false
REBUILD=false
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT=${2:?--root needs a directory}; shift 2 ;;
    --uninstall) UNINSTALL=true; shift ;;
    --purge) PURGE=true; shift ;;
    --with-service) WITH_SERVICE=true; shift ;;
    --rollback) ROLLBACK=true; shift ;;
    --rebuild) REBUILD=true; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

R=${ROOT%/}
APP=$R/opt/door-agent
NEW=$APP.new
PREV=$APP.prev
BIN=$R/usr/local/bin/door-agent
UNITS=$R/etc/systemd/system
ETC=$R/etc/door-agent
DATA=$R/var/lib/door-agent
BUILD_CACHE=$R/var/cache/door-agent/build
REAL_ROOT=false
[ "$R" = "" ] && REAL_ROOT=true
say() { printf 'door-agent install: %s\n' "$*"; }
systemd_running() { $REAL_ROOT && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }
UNIT_NAMES=(door-agent.service door-agent-service.service)

if $REAL_ROOT && [ "$(id -u)" != 0 ]; then
  echo "install.sh: run as root (sudo), or use --root DIR for a test install" >&2
  exit 1
fi

if $UNINSTALL; then
  if systemd_running; then
    systemctl disable --now "${UNIT_NAMES[@]}" 2>/dev/null || true
  fi
  rm -f "$UNITS/door-agent.service" "$UNITS/door-agent-service.service" "$BIN"
  rm -rf "$APP" "$NEW" "$PREV" "$(dirname "$BUILD_CACHE")"
  if $PURGE; then
    rm -rf "$ETC" "$DATA" "$R/var/lib/door-agent-service"
    if $REAL_ROOT && id door-agent >/dev/null 2>&1; then userdel door-agent || true; fi
    say "removed door-agent, its configuration and its data"
  else
    say "removed door-agent; kept $ETC and $DATA (--purge removes them)"
  fi
  if systemd_running; then systemctl daemon-reload; fi
  exit 0
fi

# The running units (door-agent first: stopping it locks every relay through ExecStopPost), stopped around the
# switch and started again after it, so the door is locked (never half-upgraded) while the directories move.
STOPPED=()
stop_running_units() {
  systemd_running || return 0
  local unit
  for unit in "${UNIT_NAMES[@]}"; do
    if systemctl is-active --quiet "$unit"; then
      say "stopping $unit (the relays are locked while the program is replaced)"
      systemctl stop "$unit"
      STOPPED+=("$unit")
    fi
  done
}
start_stopped_units() {
  systemd_running || return 0
  systemctl daemon-reload
  local unit failed=()
  for unit in "${STOPPED[@]}"; do
    say "starting $unit again"
    systemctl start "$unit" || failed+=("$unit")
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "install.sh: ${failed[*]} did not start (its relays stay locked): see journalctl -u ${failed[0]}; the previous version is in $PREV: sudo $SRC/scripts/install.sh --rollback" >&2
    exit 1
  fi
}

if $ROLLBACK; then
  if [ ! -d "$PREV/dist" ]; then
    echo "install.sh: no previous version to go back to ($PREV is missing)" >&2
    exit 1
  fi
  stop_running_units
  rm -rf "$NEW"
  mv "$APP" "$NEW" && mv "$PREV" "$APP" && mv "$NEW" "$PREV"
  say "switched back: $APP is the previous version again, $PREV the one it replaced (--rollback again goes forward)"
  start_stopped_units
  exit 0
fi

# Everything the build needs, listed at once with the packages that bring it.
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
    echo "install.sh: cannot build door-agent yet; missing:"
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
    find . \( -name .git -o -path ./node_modules -o -path ./dist -o -path ./build \) -prune -o \( -type f -o -type l \) -printf '%P\0'
  fi
}
copy_sources() {
  local file
  list_sources | while IFS= read -r -d '' file; do
    case "$file" in node_modules/*|dist/*|build/*) continue ;; esac
    if [ -e "$file" ] || [ -L "$file" ]; then printf '%s\0' "$file"; fi # a tracked file deleted in the work tree
  done | tar --null -T - -cf - | tar -C "$1" -xf -
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
  if ! $REBUILD && [ -d "$BUILD_CACHE/node_modules" ] && [ "$(cat "$BUILD_CACHE/key" 2>/dev/null)" = "$key" ]; then
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
    save_build "$stage" "$key"
  fi
  for addon in "${ADDONS[@]}"; do
    if [ ! -f "$stage/$addon" ]; then
      echo "install.sh: npm ci did not build the native addon $addon; see the output above" >&2
      exit 1
    fi
  done
  before=$(addon_stamps "$stage")
  (cd "$stage" && npm prune --omit=dev --no-audit --no-fund)
  if [ "$(addon_stamps "$stage")" != "$before" ]; then
    echo "install.sh: npm prune --omit=dev removed or rebuilt a native addon:" >&2
    diff <(printf '%s\n' "$before") <(addon_stamps "$stage") >&2 || true
    exit 1
  fi
}

# /opt/door-agent.new: only what runs (the built code, production node_modules, the addons) plus the manual,
# the examples, the units and the hardware self-test.
assemble() {
  local stage=$1
  rm -rf "$NEW"
  mkdir -p "$NEW/dist" "$NEW/build/Release" "$NEW/scripts"
  mv "$stage/dist/cli" "$NEW/dist/cli"
  mv "$stage/node_modules" "$NEW/node_modules"
  cp "$stage"/build/Release/*.node "$NEW/build/Release/"
  cp -R "$stage/config" "$stage/systemd" "$stage/native" "$stage/docs" "$stage/examples" "$NEW/"
  cp "$stage/scripts/hw-selftest.sh" "$NEW/scripts/"
  cp "$stage/package.json" "$stage/package-lock.json" "$stage/README.md" "$stage/binding.gyp" "$NEW/"
  {
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) with node $(node --version)"
    if git -c safe.directory="$SRC" -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then
      echo "from: $SRC at $(git -c safe.directory="$SRC" -C "$SRC" describe --always --dirty)"
    else
      echo "from: $SRC"
    fi
  } > "$NEW/INSTALLED"
  # The assembled program loads: the database and every addon, from where they now are.
  (cd "$NEW" && node -e '
    const Database = require("better-sqlite3");
    new Database(":memory:").prepare("select 1").get();
    for (const addon of ["sd_notify", "gpio_chardev", "evdev", "sched_policy"]) require(`./build/Release/${addon}.node`);
  ') || { echo "install.sh: the assembled program in $NEW does not load its native addons" >&2; exit 1; }
}

check_build_tools
say "installing into ${R:-/}"
mkdir -p "$R/opt" "$R/var/tmp" "$(dirname "$BIN")" "$UNITS" "$ETC" "$DATA"
STAGE=$(mktemp -d "$R/var/tmp/door-agent-build.XXXXXX")
cleanup() { rm -rf "$STAGE" "$NEW"; } # $NEW is gone once switched; a failed build leaves nothing behind
trap cleanup EXIT
build_in_stage "$STAGE"
assemble "$STAGE"

# The wrapper runs the node the addons were built for (systemd's PATH may not find an nvm or /usr/local node).
NODE=$(command -v node)
cat > "$BIN.tmp" <<WRAPPER
#!/bin/sh
exec "$NODE" "$APP/dist/cli/door-agent.js" "\$@"
WRAPPER
chmod 0755 "$BIN.tmp" && mv -f "$BIN.tmp" "$BIN"

install -m 0644 "$SRC/systemd/door-agent.service" "$UNITS/door-agent.service"
if $WITH_SERVICE; then install -m 0644 "$SRC/systemd/door-agent-service.service" "$UNITS/door-agent-service.service"; fi
if $WITH_SERVICE && [ ! -e "$ETC/service.yaml" ]; then
  install -m 0640 "$SRC/config/service.example.yaml" "$ETC/service.yaml"
  say "wrote $ETC/service.yaml from the example (the reference service's configuration)"
fi
if [ -e "$ETC/config.yaml" ]; then
  say "kept the existing $ETC/config.yaml"
else
  install -m 0640 "$SRC/config/door-agent.example.yaml" "$ETC/config.yaml"
  say "wrote $ETC/config.yaml from the example: edit it, then: door-agent config check"
fi
chmod 0750 "$ETC" "$DATA"

if $REAL_ROOT; then
  for group in gpio dialout input; do getent group "$group" >/dev/null || groupadd --system "$group"; done
  if ! id door-agent >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/door-agent --shell /usr/sbin/nologin --user-group door-agent
    say "created the system user door-agent"
  fi
  usermod -a -G gpio,dialout,input door-agent
  chgrp door-agent "$ETC" "$ETC/config.yaml"
  if [ -e "$ETC/service.yaml" ]; then chgrp door-agent "$ETC/service.yaml"; fi
  mkdir -p "$R/var/lib/door-agent-service" && chown door-agent:door-agent "$R/var/lib/door-agent-service"
  chown door-agent:door-agent "$DATA"
else
  say "(test root: users, groups and systemctl skipped)"
fi

# The switch: stop (relays locked), move the directories, start again. The old program stays in $PREV.
stop_running_units
if [ -d "$APP" ]; then
  rm -rf "$PREV"
  mv "$APP" "$PREV"
fi
mv "$NEW" "$APP"
if [ -d "$PREV" ]; then say "the previous version is kept in $PREV (scripts/install.sh --rollback goes back to it)"; fi
start_stopped_units
if systemd_running; then
  systemctl enable door-agent.service >/dev/null
  if [ ${#STOPPED[@]} -eq 0 ]; then say "enabled door-agent.service: start it with systemctl start door-agent once the config checks out"; fi
fi
say "done"
