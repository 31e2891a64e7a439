#!/usr/bin/env bash
# door-agent hardware self-test, for an installer at the door with the Raspberry Pi wired up. It checks what only
# real hardware can show, through door-agent's own drivers and the installed configuration:
#   1. the configuration is valid;
#   2. each relay clicks: driven to its unlocked level for 2 s, then back to locked (listen for the strike);
#   3. each door contact, exit button and tamper switch, and the emergency (fire alarm) input: for 20 s every level
#      change is printed (open the door, press the button, open the enclosure, trip the fire panel's relay or
#      unplug its loop);
#   4. each reader: for 20 s every frame is printed by kind (tap a card, type 1234#), card numbers masked (a PN532
#      prints its firmware version once it answers: the HSU wiring, mode switches and baud rate are right); for a
#      Wiegand reader also every frame dropped and why (parity, bit count, noise);
#   2b. each reader's LED and buzzer lines (reader.led, reader.buzzer): the grant, deny and lockdown patterns are
#      played once each, 2 s apart (watch the reader's LED, listen for its beeper); a serial reader with
#      reader.replies is sent its grant reply;
#   5. with gpio.driver chardev: what this board's kernel does with a relay line when its program exits (keeps
#      the level, or returns it to an input so the relay board's pull decides).
# Every relay is left at its locked level, whatever happens (door-agent relock runs at the end).
#
#   sudo systemctl stop door-agent        # the daemon must not hold the pins meanwhile
#   sudo -u door-agent /opt/door-agent/scripts/hw-selftest.sh [/etc/door-agent/config.yaml]
#   sudo systemctl start door-agent
set -euo pipefail
CONFIG="${1:-${DOOR_AGENT_CONFIG:-/etc/door-agent/config.yaml}}"
APP="$(cd "$(dirname "$0")/.." && pwd)"
CLI="$APP/dist/cli/door-agent.js"
for built in "$CLI" "$APP/dist/cli/hw-selftest-kit.js"; do
  [ -f "$built" ] || { echo "hw-selftest: $built is missing: install door-agent with scripts/install.sh (in a clone: npm ci, then npm run build)" >&2; exit 1; }
done
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet door-agent 2>/dev/null; then
  echo "hw-selftest: door-agent is running and holds the pins: sudo systemctl stop door-agent, then run this again" >&2
  exit 1
fi
trap 'node "$CLI" relock --config "$CONFIG" >/dev/null 2>&1 || echo "hw-selftest: door-agent relock failed: check the relays!" >&2' EXIT

echo "== 1. configuration"
node "$CLI" config check --config "$CONFIG"

APP="$APP" CONFIG="$CONFIG" SECONDS_TO_WATCH="${HW_SELFTEST_SECONDS:-20}" node --input-type=module <<'NODE'
const app = process.env.APP;
const watchMs = Number(process.env.SECONDS_TO_WATCH) * 1000;
// door-agent's own loader, drivers and readers, from the installed bundle (an installed tree has nothing else).
const {
  pino, loadConfig, createGpioDriver, relayLevel, credentialHint, normalizeCredential, SerialReader, WiegandReader,
  Pn532Reader, OsdpBuses, inputDevicePorts, ReaderSignals, describeReader, readerCardFormat, readScbk, systemClock,
  systemTimers,
} = await import(`${app}/dist/cli/hw-selftest-kit.js`);
const config = loadConfig(process.env.CONFIG);
const gpio = createGpioDriver(config.gpio);
if (config.gpio.driver === 'chardev') console.log(`GPIO character device: ${gpio.chip.path} "${gpio.chip.label}" (${gpio.chip.lines} lines)`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stamp = () => new Date().toISOString().slice(11, 23);

console.log('== 2. relays: each is unlocked for 2 s, then locked again; listen for the strike or the maglock');
for (const door of config.doors) {
  const locked = relayLevel('LOCKED', door.failMode, door.relay.activeLow);
  const relay = gpio.openOutput(door.relay.pin, locked);
  console.log(`${door.name}: GPIO ${door.relay.pin} unlocked (level ${1 - locked}) ...`);
  relay.write(relayLevel('UNLOCKED', door.failMode, door.relay.activeLow));
  await sleep(2000);
  relay.write(locked);
  console.log(`${door.name}: GPIO ${door.relay.pin} locked (level ${locked}), reads back ${relay.read()}`);
}

const signalled = config.doors.filter((d) => d.reader && d.reader.type !== 'osdp' && (d.reader.led || d.reader.buzzer));
if (signalled.length > 0) console.log('== 2b. reader LED and buzzer lines: grant, deny, lockdown, 2 s apart');
for (const door of signalled) {
  const signals = new ReaderSignals(door.reader, { gpio, timers: systemTimers, logger: pino({ level: 'warn' }) });
  for (const kind of ['grant', 'deny', 'lockdown']) {
    const lines = [door.reader.led && `LED GPIO ${door.reader.led.pin}`, door.reader.buzzer && `buzzer GPIO ${door.reader.buzzer.pin}`].filter(Boolean);
    console.log(`${door.name}: ${kind} on ${lines.join(' and ')}`);
    signals.play(kind);
    await sleep(2000);
  }
  signals.close();
}

const inputs = config.doors.flatMap((d) => [
  ...(d.contact ? [{ door: d.name, what: 'door contact', pin: d.contact.pin, pull: d.contact.pull, idle: 1 - d.contact.openLevel, meaning: (l) => (l === d.contact.openLevel ? 'OPEN' : 'CLOSED') }] : []),
  ...(d.exitButton ? [{ door: d.name, what: 'exit button', pin: d.exitButton.pin, pull: d.exitButton.pull, idle: 1 - d.exitButton.activeLevel, meaning: (l) => (l === d.exitButton.activeLevel ? 'PRESSED' : 'released') }] : []),
  ...(d.tamper ? [{ door: d.name, what: 'tamper switch', pin: d.tamper.pin, pull: d.tamper.pull, idle: 1 - d.tamper.activeLevel, meaning: (l) => (l === d.tamper.activeLevel ? 'OPEN (tamper)' : 'closed') }] : []),
]);
// The fire alarm loop (normally closed: open = alarm, and a cut wire reads the same) and its confirm contact
// (normally open); the released doors are not moved here, only the levels are shown.
const e = config.emergency;
if (e) {
  inputs.push({ door: 'agent', what: 'emergency input', pin: e.pin, pull: e.pull, idle: 1 - e.activeLevel, meaning: (l) => (l === e.activeLevel ? 'OPEN (alarm: its doors would be released)' : 'closed (normal)') });
  if (e.confirmPin !== null) inputs.push({ door: 'agent', what: 'emergency confirm contact', pin: e.confirmPin, pull: e.pull, idle: e.activeLevel, meaning: (l) => (l === e.activeLevel ? 'open (normal)' : 'CLOSED (alarm)') });
}
const readers = config.doors.filter((d) => d.reader);
console.log(`== 3 and 4. for ${watchMs / 1000} s: open and close the door, press the exit button, tap a card, type 1234#${e ? ', trip the fire alarm relay' : ''}`);
for (const input of inputs) {
  const pin = gpio.openInput(input.pin, (level) => console.log(`${stamp()} ${input.door}: ${input.what} (GPIO ${input.pin}) ${input.meaning(level)}`), input.idle, input.pull);
  console.log(`${input.door}: ${input.what} (GPIO ${input.pin}, pull ${input.pull}) is ${input.meaning(pin.read())} now`);
}
const logger = pino({ level: 'warn' });
// OSDP: the reader on its bus, with its online state, identity and secure channel printed as they come.
const osdpBuses = new OsdpBuses({ clock: systemClock, timers: systemTimers, logger: pino({ level: 'info' }) });
function osdpReader(d, common) {
  let handle = null;
  return {
    start() {
      const r = d.reader;
      if (!r.scbkFile && !r.installMode) console.log(`${stamp()} ${d.name}: OSDP reader ${r.address} channel in use: PLAIN (no scbkFile: a device on the bus can read and inject cards and PINs)`);
      handle = osdpBuses.attach(r.path, r.baudRate, {
        address: r.address, numbering: r.numbering, installMode: r.installMode,
        ...(r.scbkFile ? { scbk: readScbk('reader.scbkFile', r.scbkFile) } : {}),
        onFrame: common.onFrame,
        onOnline: (up) => console.log(`${stamp()} ${d.name}: OSDP reader ${r.address} ${up ? 'online' : 'OFFLINE'}`),
        onIdentified: (id) => console.log(`${stamp()} ${d.name}: OSDP reader ${r.address}: vendor ${id.vendor}, model ${id.model}, serial ${id.serial}, firmware ${id.firmware}`),
        onSecure: (up) => console.log(`${stamp()} ${d.name}: secure channel ${up ? 'established' : 'ended'}`),
        onSecureError: (message) => console.log(`${stamp()} ${d.name}: secure channel: ${message}`),
        // The channel actually in use, not only the configured one: plain, pending, secure or failed.
        onChannel: (state) => console.log(`${stamp()} ${d.name}: OSDP reader ${r.address} channel in use: ${state.toUpperCase()}`),
        onQuirk: (message) => console.log(`${stamp()} ${d.name}: ${message}`),
        onStatus: (s) => console.log(`${stamp()} ${d.name}: tamper ${s.tamper ? 'OPEN' : 'closed'}, power ${s.powerFailure ? 'FAILED' : 'good'}`),
        onDropped: (reason) => console.log(`${stamp()} ${d.name}: dropped (${reason})`),
      });
      // Show the reader answering: green, one beep.
      setTimeout(() => handle?.feedback('grant'), 2000);
    },
    async stop() { await handle?.detach(); },
  };
}
// PN532: woken and set up as the daemon does; its firmware version is printed once it answers (the installer's
// check that the HSU wiring, the mode switches and the baud rate are right), then each card read.
function pn532Reader(d, common) {
  return new Pn532Reader(d.reader, {
    logger: pino({ level: 'warn' }), clock: systemClock, timers: systemTimers, gpio,
    events: {
      credential: (c) => console.log(`${stamp()} ${d.name}: card ${credentialHint(c.value, c.kind)}`),
      connection: common.onConnectionChange,
      identity: (text) => console.log(`${stamp()} ${d.name}: PN532 answers: firmware ${text}`),
    },
  });
}
const open = readers.map((d) => {
  const common = {
    logger, clock: systemClock, timers: systemTimers,
    onConnectionChange: (up) => console.log(`${stamp()} ${d.name}: reader ${describeReader(d.reader)} ${up ? 'connected' : 'NOT connected'}`),
    onFrame: (frame) => {
      if (frame.kind === 'noise' || frame.kind === 'keypad_cleared') return console.log(`${stamp()} ${d.name}: ${frame.kind}`);
      const normalized = normalizeCredential(frame.value, frame.kind, readerCardFormat(d));
      console.log(`${stamp()} ${d.name}: ${frame.kind} ${normalized === null ? '(malformed)' : credentialHint(normalized, frame.kind)}`);
    },
  };
  const reader = d.reader.type === 'serial'
    ? new SerialReader({ ...d.reader, ...common })
    : d.reader.type === 'osdp'
    ? osdpReader(d, common)
    : d.reader.type === 'pn532'
    ? pn532Reader(d, common)
    : d.reader.type === 'keyboard'
    ? new SerialReader({ ...d.reader, ...common, baudRate: 0, format: 'lines', openPort: inputDevicePorts() })
    // Wiegand: dropped frames show as the daemon's warning, once a second with the count per reason.
    : new WiegandReader({ ...d.reader, ...common, gpio });
  reader.start();
  const grantReply = d.reader.type === 'serial' ? (d.reader.replies?.grant ?? null) : null;
  if (grantReply !== null) {
    setTimeout(() => console.log(`${stamp()} ${d.name}: grant reply ${JSON.stringify(grantReply)} ${reader.send(grantReply) ? 'sent' : 'NOT sent (reader not connected)'}`), 2000);
  }
  if (reader.lineLevels) {
    const levels = reader.lineLevels();
    const held = Object.entries(levels).filter(([, level]) => level === 0).map(([line]) => line.toUpperCase());
    console.log(`${d.name}: Wiegand D0 = ${levels.d0}, D1 = ${levels.d1} at rest` + (held.length > 0
      ? ` - WARNING: ${held.join(' and ')} held low: check the wiring and the level shifter (both idle high)`
      : ' (good: both idle high)'));
  }
  return reader;
});
await sleep(watchMs);
for (const reader of open) await reader.stop();
gpio.close();
if (config.gpio.driver === 'chardev') {
  // The kernel's own line info keeps the direction it last set, whatever the pin driver did on release: only the
  // pin's real function (pinctrl, from raspi-utils) and the relay itself tell.
  console.log('== 5. released relay lines: the lines are free now, as after door-agent exits or crashes');
  console.log('   Listen: a relay that clicks now was returned to an input and its board\'s pull decided; it must stay locked.');
  const { spawnSync } = await import('node:child_process');
  for (const door of config.doors) {
    const shown = spawnSync('pinctrl', ['get', String(door.relay.pin)], { encoding: 'utf8' });
    if (shown.error || shown.status !== 0) {
      console.log(`${door.name}: GPIO ${door.relay.pin}: install raspi-utils (pinctrl) to see the pin's state; listen to the relay instead`);
      continue;
    }
    const line = shown.stdout.trim();
    const locked = relayLevel('LOCKED', door.failMode, door.relay.activeLow);
    const kept = / op /.test(` ${line} `) && (locked === 1 ? / dh /.test(` ${line} `) : / dl /.test(` ${line} `));
    const level = / hi /.test(` ${line} `) ? 1 : / lo /.test(` ${line} `) ? 0 : null;
    console.log(`${door.name}: ${line}`);
    console.log(kept
      ? `   kept as an output at the locked level: after a crash the relay stays as it was until door-agent relock (ExecStopPost) locks it`
      : level === locked
        ? `   an input now, reading the locked level (${locked}): the wiring keeps the door locked when nothing drives it`
        : `   WARNING: not driven, and not at the locked level (${locked}): with this kernel the door unlocks whenever door-agent is not running. ` +
          `Wire a pull to the locked level, or keep released lines (remove dtparam=strict_gpiod), see docs/hardware.md`);
  }
}
console.log('== done: every relay is driven locked now (door-agent relock)');
process.exit(0);
NODE
