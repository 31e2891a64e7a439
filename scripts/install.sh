#!/usr/bin/env bash
# Installs door-agent on Raspberry Pi OS / Debian as a hardened systemd service. Idempotent: run it again to
# upgrade; an existing /etc/door-agent/config.yaml is never overwritten.
#
#   sudo scripts/install.sh                 install or upgrade (npm ci --omit=dev, user, groups, units, config)
#   sudo scripts/install.sh --with-service  also the reference access-control service unit
#   sudo scripts/install.sh --uninstall     remove the program and units (keeps /etc/door-agent and the data)
#   sudo scripts/install.sh --uninstall --purge   also remove the configuration and the data
#   scripts/install.sh --root DIR --no-npm  into a throwaway root (tests): no users, no systemctl, node_modules copied
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)

ROOT=/
NPM=true
UNINSTALL=false
PURGE=false
WITH_SERVICE=false
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT=$2; shift 2 ;;
    --no-npm) NPM=false; shift ;;
    --uninstall) UNINSTALL=true; shift ;;
    --purge) PURGE=true; shift ;;
    --with-service) WITH_SERVICE=true; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

R=${ROOT%/}
APP=$R/opt/door-agent
BIN=$R/usr/local/bin/door-agent
UNITS=$R/etc/systemd/system
ETC=$R/etc/door-agent
DATA=$R/var/lib/door-agent
REAL_ROOT=false
[ "$R" = "" ] && REAL_ROOT=true
say() { printf 'door-agent install: %s\n' "$*"; }
systemd_running() { $REAL_ROOT && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

if $REAL_ROOT && [ "$(id -u)" != 0 ]; then
  echo "install.sh: run as root (sudo), or use --root DIR for a test install" >&2
  exit 1
fi

if $UNINSTALL; then
  if systemd_running; then
    systemctl disable --now door-agent.service door-agent-service.service 2>/dev/null || true
  fi
  rm -f "$UNITS/door-agent.service" "$UNITS/door-agent-service.service" "$BIN"
  rm -rf "$APP"
  if $PURGE; then
    rm -rf "$ETC" "$DATA" "$R/var/lib/door-agent-service"
    if $REAL_ROOT && id door-agent >/dev/null 2>&1; then userdel door-agent || true; fi
    say "removed door-agent, its configuration and its data"
  else
    say "removed door-agent; kept $ETC and $DATA (--purge removes them)"
  fi
  systemd_running && systemctl daemon-reload
  exit 0
fi

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "install.sh: door-agent needs Node.js 20 or newer (found: $(node --version 2>/dev/null || echo none)). On Raspberry Pi OS: apt-get install nodejs (from NodeSource for 20+)" >&2
  exit 1
fi
if [ ! -f "$SRC/dist/src/cli.js" ]; then
  echo "install.sh: dist/ is missing: run npm ci (it builds) in $SRC first" >&2
  exit 1
fi

say "installing into ${R:-/}"
mkdir -p "$APP" "$(dirname "$BIN")" "$UNITS" "$ETC" "$DATA"
# The program: built code, manifest, examples, units and the sd_notify addon's source (npm ci builds it).
# Replaced as a whole on upgrade.
rm -rf "$APP/dist" "$APP/config" "$APP/systemd" "$APP/native" "$APP/build" "$APP/scripts"
cp -R "$SRC/dist" "$SRC/config" "$SRC/systemd" "$SRC/native" "$APP/"
mkdir -p "$APP/scripts" && cp "$SRC/scripts/hw-selftest.sh" "$APP/scripts/"
cp "$SRC/package.json" "$SRC/package-lock.json" "$SRC/.npmrc" "$SRC/README.md" "$SRC/binding.gyp" "$APP/"
if $NPM; then
  (cd "$APP" && npm ci --omit=dev --no-audit --no-fund)
else
  rm -rf "$APP/node_modules"
  cp -R "$SRC/node_modules" "$APP/node_modules"
  cp -R "$SRC/build" "$APP/build"
fi

cat > "$BIN" <<'WRAPPER'
#!/bin/sh
exec node /opt/door-agent/dist/src/cli.js "$@"
WRAPPER
chmod 0755 "$BIN"

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

if systemd_running; then
  systemctl daemon-reload
  systemctl enable door-agent.service >/dev/null
  say "enabled door-agent.service: start it with systemctl start door-agent once the config checks out"
fi
say "done"
