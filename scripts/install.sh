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
# --omit=dev (scripts/build-program.sh, shared with npm run package; the user and the directories are made by
# scripts/system-setup.sh, shared with the Debian package's postinst). Only what runs goes to /opt/door-agent.new.
# Then, if door-agent.service is running, it is stopped (its ExecStopPost locks every relay), /opt/door-agent
# becomes /opt/door-agent.prev, the new one takes its place, and the service starts again. The dependencies as
# npm ci built them (with the native addons) are kept in /var/cache/door-agent/build: an upgrade whose
# package-lock.json, native code, Node.js and CPU are the same reuses them instead of compiling again (tens of
# minutes on a small Pi); --rebuild compiles anyway.
set -euo pipefail
umask 022 # the program must be readable by the door-agent user whatever root's umask is (secrets get explicit modes)
cd "$(dirname "$0")/.."
SRC=$(pwd)
PROG=install.sh
. "$SRC/scripts/build-program.sh"
. "$SRC/scripts/system-setup.sh"

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
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
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
    systemctl disable --now door-agent-update.path "${UNIT_NAMES[@]}" 2>/dev/null || true
  fi
  rm -f "$UNITS/door-agent.service" "$UNITS/door-agent-service.service" "$UNITS/door-agent-update.path" "$UNITS/door-agent-update.service" "$BIN"
  rm -rf "$APP" "$NEW" "$PREV" "$(dirname "$BUILD_CACHE")"
  if $PURGE; then
    purge_system
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

check_build_tools
say "installing into ${R:-/}"
mkdir -p "$R/opt" "$R/var/tmp" "$(dirname "$BIN")" "$UNITS" "$ETC" "$DATA"
STAGE=$(mktemp -d "$R/var/tmp/door-agent-build.XXXXXX")
cleanup() { rm -rf "$STAGE" "$NEW"; } # $NEW is gone once switched; a failed build leaves nothing behind
trap cleanup EXIT
build_in_stage "$STAGE"
rm -rf "$NEW"
assemble_program "$STAGE" "$NEW"

write_wrapper "$BIN" "$(command -v node)" "$APP"

install -m 0644 "$SRC/systemd/door-agent.service" "$UNITS/door-agent.service"
# An update a rollout offered: the daemon downloads it and writes its request; this root unit installs it (docs/fleet.md).
install -m 0644 "$SRC/systemd/door-agent-update.path" "$UNITS/door-agent-update.path"
install -m 0644 "$SRC/systemd/door-agent-update.service" "$UNITS/door-agent-update.service"
if $WITH_SERVICE; then install -m 0644 "$SRC/systemd/door-agent-service.service" "$UNITS/door-agent-service.service"; fi
EXAMPLES=$SRC/config
SCHEMA=$APP/schema/config.schema.json
setup_system

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
  systemctl enable --now door-agent-update.path >/dev/null
  if [ ${#STOPPED[@]} -eq 0 ]; then say "enabled door-agent.service: start it with systemctl start door-agent once the config checks out"; fi
fi
say "done"
