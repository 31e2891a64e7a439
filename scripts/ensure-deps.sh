#!/usr/bin/env bash
# Installs what `npm test` and `npm start` need on a fresh Debian 12 + Node 20 machine:
# the npm dependencies (npm ci), the native addons (native/*.c, rebuilt when a source is newer), and the test
# peers from Debian when running as root: mosquitto, mosquitto-clients, socat, tmux (the demo test), openssl
# (the TLS tests), faketime (a board booting with its clock behind), chromium (the console's browser tests),
# haproxy (the service behind the shipped examples/haproxy/haproxy.cfg), postgresql (the service's tests on
# PostgreSQL), rsyslog and rsyslog-gnutls (the SIEM export's receiver, over TLS), slapd and ldap-utils (the LDAP
# sync's server), lintian, dpkg-dev, debootstrap and dpkg-repack (the Debian package's test). The tests start their own haproxy and PostgreSQL cluster (initdb into a temporary directory, from
# /usr/lib/postgresql/<version>/bin, which is not on PATH); none uses the system services these packages bring.
# --warn-only: report missing Debian packages instead of failing (npm start does not need them).
set -euo pipefail
cd "$(dirname "$0")/.."
warn_only=false
[ "${1:-}" = "--warn-only" ] && warn_only=true

# Fast when nothing is missing (a second npm start): `node --version` and file tests, no JavaScript run, no apt or
# dpkg query; the headers are looked up only when something is to be built.
node_version=$(node --version)
node_major=${node_version#v}
node_major=${node_major%%.*}
if [ "$node_major" -lt 20 ]; then
  echo "door-agent needs Node.js 20 or newer (found $node_version)." >&2
  exit 1
fi

# Native addons build against the local Node.js headers (no download): npm_config_nodedir when they exist.
. scripts/node-headers.sh

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "Installing npm dependencies with npm ci (better-sqlite3 builds from source: about 75 s the first time)..."
  export_node_headers
  npm ci --no-audit --no-fund
fi

# The addons (native/*.c, binding.gyp): npm ci builds them; build them again when a source changed since.
addons_stale() {
  local addon src
  for addon in build/Release/sd_notify.node build/Release/gpio_chardev.node build/Release/evdev.node build/Release/sched_policy.node; do
    [ -f "$addon" ] || return 0
    for src in native/*.c binding.gyp; do
      if [ "$src" -nt "$addon" ]; then return 0; fi
    done
  done
  return 1
}
if addons_stale; then
  echo "Building the native addons (native/*.c) with node-gyp..."
  export_node_headers
  # npm's own node-gyp, the one npm ci runs (npx node-gyp would fetch another copy); it reads npm_config_nodedir.
  node_gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  if [ -f "$node_gyp" ]; then
    node "$node_gyp" rebuild --loglevel=warn >/dev/null
  else
    npx --yes node-gyp rebuild --loglevel=warn >/dev/null
  fi
fi

missing=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing+=(mosquitto)
command -v mosquitto_pub >/dev/null 2>&1 || missing+=(mosquitto-clients)
command -v socat >/dev/null 2>&1 || missing+=(socat)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
python3 -c 'import jinja2' >/dev/null 2>&1 || missing+=(python3-jinja2) # Home Assistant's templates, rendered as it does
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
# The syslog export's tests start their own rsyslogd (never the system's) with its GnuTLS stream driver.
[ -x /usr/sbin/rsyslogd ] || missing+=(rsyslog)
ls /usr/lib/*/rsyslog/lmnsd_gtls.so >/dev/null 2>&1 || missing+=(rsyslog-gnutls)
# The LDAP sync's tests and benchmark start their own slapd (bench/slapd.ts: a temporary directory, loopback ports),
# never the system's; ldap-utils' ldapadd and ldapmodify make their changes.
[ -x /usr/sbin/slapd ] || missing+=(slapd)
command -v ldapadd >/dev/null 2>&1 || missing+=(ldap-utils)
# The Debian package's test (npm run package, then installed in a fresh Debian root): lintian checks the package,
# dpkg-dev finds what its addons link, debootstrap makes the root, dpkg-repack packs this machine's Node.js for it.
command -v lintian >/dev/null 2>&1 || missing+=(lintian)
command -v dpkg-shlibdeps >/dev/null 2>&1 || missing+=(dpkg-dev)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
command -v dpkg-repack >/dev/null 2>&1 || missing+=(dpkg-repack)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian packages: ${missing[*]}"
    apt-get update -qq
    # slapd's postinst asks for a domain and an admin password: told to make no configuration, it asks nothing.
    if [[ " ${missing[*]} " == *" slapd "* ]]; then
      echo 'slapd slapd/no_configuration boolean true' | debconf-set-selections
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # The system's slapd stays stopped and is not started at boot: the tests run their own.
    if [[ " ${missing[*]} " == *" slapd "* ]]; then
      invoke-rc.d slapd stop >/dev/null 2>&1 || true
      update-rc.d slapd disable >/dev/null 2>&1 || true
    fi
  elif [ "$warn_only" = true ]; then
    echo "Note: ${missing[*]} not installed (needed by npm test): sudo apt-get install ${missing[*]}" >&2
  else
    echo "Missing Debian packages needed by the tests: ${missing[*]}" >&2
    echo "Install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
