#!/usr/bin/env bash
# npm start: a five-minute tour of door-agent without hardware, on a door with simulated GPIO.
# (The full demo with a broker, the reference service and a live reader comes with `door-agent demo`.)
set -euo pipefail
cd "$(dirname "$0")/.."
cli() { node dist/src/cli.js "$@"; }
config=examples/door-agent.yaml
step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }

step "Validate the documented example configuration" "door-agent config check --config config/door-agent.example.yaml"
cli config check --config config/door-agent.example.yaml

step "Provision the cache offline from a snapshot (5 users, 1 guest link)" "door-agent import examples/snapshot.json --config $config"
rm -rf demo-data
cli import examples/snapshot.json --config "$config"

try() {
  local what=$1; shift
  printf '\n  %s\n  $ door-agent check %s\n  ' "$what" "$*"
  set +e; cli check "$@" --config "$config"; local rc=$?; set -e
  printf '  exit %s\n' "$rc"
}
step "Ask the door" "door-agent check CREDENTIAL [--kind card|pin|token] [--at ISO]"
try "Alice, Staff, her badge (the reader may send leading zeros):" 0004213578
try "Alice's PIN:" 1234 --kind pin
try "Bob's badge: Bob is suspended:" 4213579
try "Dave's badge: Contractors may not open this door:" 4213580
try "Erin's badge: not Staff, but holds the 'Night shift' policy:" 4213581
try "Carol's visitor card on a Monday at 10:00 Berlin time (guest link Mon-Fri 9-17):" 7700001 --at 2026-11-23T10:00:00+01:00
try "...and on Sunday (no access that day):" 7700001 --at 2026-11-22T10:00:00+01:00
try "Carol's QR token on a weekday afternoon:" guest-token-carol-0001 --kind token --at 2026-11-24T16:30:00+01:00
try "A card nobody holds:" 99999999

step "Drive every relay to its locked level (what systemd runs after the daemon stops)" "door-agent relock --config $config"
cli relock --config "$config"
printf '  simulated relay file demo-data/gpio/gpio17/value holds: %s\n' "$(cat demo-data/gpio/gpio17/value)"

printf '\nNext: README.md (configuration, snapshot format, decision rules); npm test runs the test suite.\n\n'
cli --help
