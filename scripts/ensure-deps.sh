#!/usr/bin/env bash
# Installs what `npm test` and `npm start` need on a fresh Debian 12 + Node 20 machine:
# the npm dependencies (npm ci), and the test peers from Debian when running as root: mosquitto,
# mosquitto-clients, socat, tmux (the demo test), openssl (the TLS tests), faketime (a board booting with its
# clock behind).
# --warn-only: report missing Debian packages instead of failing (npm start does not need them).
set -euo pipefail
cd "$(dirname "$0")/.."
warn_only=false
[ "${1:-}" = "--warn-only" ] && warn_only=true

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "door-agent needs Node.js 20 or newer (found $(node --version))." >&2
  exit 1
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "Installing npm dependencies with npm ci (better-sqlite3 builds from source: about 75 s the first time)..."
  npm ci --no-audit --no-fund
fi

missing=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing+=(mosquitto)
command -v mosquitto_pub >/dev/null 2>&1 || missing+=(mosquitto-clients)
command -v socat >/dev/null 2>&1 || missing+=(socat)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  elif [ "$warn_only" = true ]; then
    echo "Note: ${missing[*]} not installed (needed by npm test): sudo apt-get install ${missing[*]}" >&2
  else
    echo "Missing Debian packages needed by the tests: ${missing[*]}" >&2
    echo "Install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
