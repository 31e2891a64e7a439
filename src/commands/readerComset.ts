import { statSync } from 'node:fs';
import { loadConfig } from '../config/load.js';
import type { AgentOptions } from '../config/options.js';
import { CMD, REPLY, describeNak } from '../readers/osdp/codes.js';
import { decodeComSettings, encodeComSettings, newAddressProblem, newBaudProblem, type ComSettings } from '../readers/osdp/comset.js';
import { DataDirBusyError, dataDirHolder } from '../system/dataDirLock.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import { readScbk } from '../util/secretFiles.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { noteReaderChange, osdpTarget, readerKey, readerOf, type OsdpTarget } from './osdpReaderChoice.js';
import { openOsdpSession, sessionTarget, type OsdpSessionTarget } from './osdpSession.js';

/** The first contact may include a secure channel handshake (as keyset). */
const FIRST_CONTACT_MS = 15_000;
/** After osdp_COM: the reader has switched, or it never will. */
const CONFIRM_MS = 5_000;

type Setting = 'address' | 'baud';

/** The other readers on the same bus (same device), by address, named as the operator finds them in the file. */
function busNeighbours(config: AgentOptions, target: OsdpTarget): Map<number, string> {
  const taken = new Map<number, string>();
  config.doors.forEach((door, i) => {
    for (const choice of ['entry', 'exit'] as const) {
      const reader = readerOf(door, choice);
      if (reader?.type !== 'osdp' || reader.path !== target.reader.path) continue;
      if (door === target.door && choice === target.choice) continue;
      taken.set(reader.address, `${door.name}'s (${door.uuid}) doors[${i}].${readerKey(door, choice)}`);
    }
  });
  return taken;
}

function parseTo(setting: Setting, to: string | undefined): number {
  const what = setting === 'address' ? 'the new address (0-126)' : 'the new baud rate';
  if (to === undefined) throw new UsageError(`--to is required: ${what}`);
  if (!/^\d+$/.test(to)) throw new UsageError(`--to must be a number: ${what}, not ${to}`);
  return Number(to);
}

const describe = (s: ComSettings) => `address ${s.address} at ${s.baudRate} baud`;

/**
 * `door-agent reader osdp set-address|set-baud --to N`: moves an OSDP reader to a new address or baud rate with
 * osdp_COMSET, sent at the settings the configuration gives (over the secure channel when it has a key); the
 * reader's osdp_COM must echo exactly the settings asked for, and the reader must answer there before the
 * command says it worked. The configuration file is the operator's: the command prints the line to change and
 * does not write it. The daemon must be stopped: it holds the bus.
 */
async function runComset(
  setting: Setting,
  args: { config: string | undefined; door: string | undefined; reader: string | undefined; to: string | undefined },
  ctx: CommandContext,
): Promise<number> {
  const name = setting === 'address' ? 'set-address' : 'set-baud';
  const config = loadConfig(configPath(args.config, ctx.env));
  const holder = dataDirHolder(config.agent.dataDir);
  if (holder) throw new DataDirBusyError(config.agent.dataDir, holder.pid, `reader osdp ${name} does not talk to a bus a running daemon holds`);
  const target = osdpTarget(config, args.door, args.reader);
  const { door, reader, which } = target;
  const to = parseTo(setting, args.to);
  // Refused before a byte is sent: the reader keeps working at the settings it has.
  const problem = setting === 'address' ? newAddressProblem(to, reader.address, busNeighbours(config, target)) : newBaudProblem(to, reader.baudRate);
  if (problem) throw new UsageError(`--to ${to}: ${problem}`);
  const before: ComSettings = { address: reader.address, baudRate: reader.baudRate };
  const asked: ComSettings = setting === 'address' ? { ...before, address: to } : { ...before, baudRate: to };
  // As root (an installer), the key file is the daemon's: read it as such (as keyset does).
  const keyOwner = (file: string) => (process.getuid?.() === 0 ? statSync(file, { throwIfNoEntry: false })?.uid : process.getuid?.());
  const scbk = reader.scbkFile && !reader.installMode ? readScbk(`${target.key}.scbkFile`, reader.scbkFile, keyOwner(reader.scbkFile)) : undefined;
  const at = (s: ComSettings): OsdpSessionTarget => ({ ...sessionTarget(reader, scbk), ...s });
  const label = door.name;
  /** Which of these settings the reader answers at now (for an error that leaves it somewhere unexpected). */
  const whereIsIt = async (candidates: ComSettings[]): Promise<string> => {
    for (const s of candidates) {
      try {
        await (await openOsdpSession(at(s), { label, timeoutMs: CONFIRM_MS, why: '' })).close();
        return `it answers at ${describe(s)}`;
      } catch {}
    }
    return `it answers at none of ${candidates.map(describe).join(', ')}: power it off and on, or reset it as its maker says`;
  };

  const session = await openOsdpSession(at(before), {
    label,
    timeoutMs: FIRST_CONTACT_MS,
    why: `${which} does not answer at ${describe(before)} on ${reader.path} (is door-agent stopped, the configuration right?)`,
  });
  let reply: Awaited<ReturnType<typeof session.request>>;
  try {
    reply = await session.request(CMD.COMSET, encodeComSettings(asked));
  } catch (err) {
    // The reader may have switched and its answer been lost: look for it at both.
    throw new DoorAgentError(`${label}: no answer to osdp_COMSET (${(err as Error).message}); ${await whereIsIt([asked, before])}`);
  } finally {
    await session.close();
  }
  if (reply.code === REPLY.NAK)
    throw new DoorAgentError(`${label}: ${which} refused the new settings (${describeNak(reply.data)}); it keeps ${describe(before)}`);
  const answered = reply.code === REPLY.COM ? decodeComSettings(reply.data) : null;
  if (!answered)
    throw new DoorAgentError(
      `${label}: ${which} answered osdp_COMSET with reply 0x${reply.code.toString(16)}, not osdp_COM; ${await whereIsIt([before, asked])}`,
    );
  if (answered.address !== asked.address || answered.baudRate !== asked.baudRate) {
    throw new DoorAgentError(
      `${label}: ${which} answered that it will use ${describe(answered)}, not the ${describe(asked)} asked for; the configuration is unchanged; ${await whereIsIt([answered, before])}`,
    );
  }
  try {
    await (await openOsdpSession(at(asked), { label, timeoutMs: CONFIRM_MS, why: '' })).close();
  } catch {
    throw new DoorAgentError(`${label}: ${which} took ${describe(asked)} but does not answer there; ${await whereIsIt([before])}`);
  }

  const keyPath = `doors[${target.doorIndex}].${target.key}`;
  const line = setting === 'address' ? `${keyPath}.address: ${asked.address}` : `${keyPath}.baudRate: ${asked.baudRate}`;
  ctx.stdout.write(
    `${label}: ${which} on ${reader.path} now answers at ${describe(asked)} (it was at ${describe(before)}).\n` +
      `Change this line in ${configPath(args.config, ctx.env)} before starting door-agent (it was not changed):\n  ${line}\n`,
  );
  // A bus runs at one rate (config check refuses two): the other readers on it must move too.
  const others = [...busNeighbours(config, target).values()];
  if (setting === 'baud' && others.length > 0) {
    ctx.stdout.write(
      `The other readers on ${reader.path} still run at ${before.baudRate}: move each with set-baud and change its baudRate too: ${others.join(', ')}\n`,
    );
  }
  noteReaderChange(config, target, { reason: 'reader_comset', comset: asked }, 'the change', ctx);
  return 0;
}

const commandFor =
  (setting: Setting): Command =>
  (input) =>
    runComset(
      setting,
      { config: stringOption(input, 'config'), door: stringOption(input, 'door'), reader: stringOption(input, 'reader'), to: stringOption(input, 'to') },
      input.ctx,
    );

export const setAddressCommand = commandFor('address');
export const setBaudCommand = commandFor('baud');
