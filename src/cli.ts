#!/usr/bin/env node
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { runCheck } from './commands/check.js';
import { runConfigCheck } from './commands/configCheck.js';
import type { CommandContext } from './commands/context.js';
import { runImport } from './commands/import.js';
import { runDemo } from './commands/demo.js';
import { runEvents } from './commands/events.js';
import { runRelock } from './commands/relock.js';
import { runReaderKeyset } from './commands/readerKeyset.js';
import { runDaemon, type ProcessHooks } from './commands/run.js';
import { runService, runServiceKeyCreate, runServiceOutbox } from './commands/service.js';
import { runStatus } from './commands/status.js';
import { runSync } from './commands/sync.js';
import { systemClock } from './util/clock.js';
import { DoorAgentError, UsageError } from './util/errors.js';
import { ReaderOutput } from './util/readerOutput.js';
import { VERSION } from './version.js';

const HELP = `door-agent: door controller with offline access decisions

Usage: door-agent <command> [options]

Commands:
  demo [--dir D]
        everything on this machine: broker, reference service, a door on simulated GPIO; type cards (npm start)
  run [--config F]
        the daemon: relays locked first, then the cache, inputs and readers; SIGTERM locks and stops
  status [--json] [--config F]
        door states, relock deadlines, readers, cache counts, event log, clock trust
  events [--since SEQ] [--follow] [--config F]
        the local audit log as JSON lines
  check CREDENTIAL [--kind card|pin|token] [--door UUID] [--at ISO] [--config F]
        the offline decision from the cache, as JSON; exit 0 granted, 1 denied
  import FILE [--allow-mass-removal] [--json] [--config F]
        load a snapshot file into the cache, atomically (offline provisioning)
  sync [--allow-mass-removal] [--config F]
        one sync from the access-control service, with a summary
  relock [--config F]
        drive every configured relay to its locked level and exit
  reader keyset [--door UUID] [--config F]
        give an OSDP reader a new secure channel key (saved to its scbkFile first); door-agent must be stopped
  config check [--config F]
        validate the configuration; print every problem with its key path
  service [--config F]
        the reference access-control service (HTTP API), from the file's server section
  service key create --rank REGULAR|ADMIN|SUPER|DOOR [--expires-days N] [--config F]
        create an API key for the service and print it once
  service outbox [--config F]
        the e-mail the service queued (invitations, guest links), as JSON lines

Config: --config, else $DOOR_AGENT_CONFIG, else /etc/door-agent/config.yaml
Exit codes: 0 ok/granted, 1 denied or failed, 2 usage, 78 invalid configuration
`;

type Options = NonNullable<ParseArgsConfig['options']>;

function parse(argv: string[], options: Options, positionals: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...options, config: { type: 'string' } }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/\. To specify.*$/s, ''));
  }
  if (parsed.positionals.length !== positionals.length) {
    const expected = positionals.length === 0 ? 'no arguments' : positionals.join(' ');
    throw new UsageError(`expected ${expected}, got ${parsed.positionals.length} argument(s)`);
  }
  return { values: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals };
}

const str = (v: string | boolean | undefined) => (typeof v === 'string' ? v : undefined);

const stopSignals: ProcessHooks['onStopSignal'] = (handler) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => handler(signal));
};

// Every command writes through this: when the reader goes away (door-agent events | head -n 2), the rest of the
// output is dropped, a command that would run on (events --follow, demo) stops as on Ctrl-C, the others finish
// their work, and the exit code is the command's own, without a stack trace (EPIPE is not a failure).
const stdout = new ReaderOutput(process.stdout);

/** For the commands whose output is their purpose: stop on a signal or when nobody reads any more. */
const stopSignalsOrReaderGone: ProcessHooks['onStopSignal'] = (handler) => {
  stopSignals(handler);
  stdout.onReaderGone(() => handler('stdout closed'));
};

let fatalHandler: ((err: unknown) => void) | null = null;
const die = (err: unknown) => {
  try {
    fatalHandler?.(err);
  } finally {
    process.exit(1);
  }
};

const processHooks: ProcessHooks = {
  onStopSignal: stopSignals,
  onFatal: (handler) => {
    fatalHandler = handler;
    process.on('uncaughtException', die);
    process.on('unhandledRejection', die);
  },
  raiseFatal: die,
};

export async function main(argv: string[], ctx: CommandContext): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'demo': {
      const { values } = parse(rest, { dir: { type: 'string' } }, []);
      return runDemo({ dir: str(values.dir) }, ctx, { ...processHooks, onStopSignal: stopSignalsOrReaderGone }, process.stdin);
    }
    case 'run':
      return runDaemon({ config: str(parse(rest, {}, []).values.config) }, ctx, processHooks);
    case 'status': {
      const { values } = parse(rest, { json: { type: 'boolean' } }, []);
      return runStatus({ json: values.json === true, config: str(values.config) }, ctx);
    }
    case 'events': {
      const { values } = parse(rest, { since: { type: 'string' }, follow: { type: 'boolean' } }, []);
      const stopped = new Promise<void>((resolve) => stopSignalsOrReaderGone(() => resolve()));
      return runEvents({ since: str(values.since), follow: values.follow === true, config: str(values.config) }, ctx, stopped);
    }
    case 'check': {
      const { values, positionals } = parse(
        rest,
        { kind: { type: 'string' }, door: { type: 'string' }, at: { type: 'string' } },
        ['CREDENTIAL'],
      );
      return runCheck(
        { credential: positionals[0]!, kind: str(values.kind), door: str(values.door), at: str(values.at), config: str(values.config) },
        ctx,
      );
    }
    case 'import': {
      const { values, positionals } = parse(
        rest,
        { 'allow-mass-removal': { type: 'boolean' }, json: { type: 'boolean' } },
        ['FILE'],
      );
      return runImport(
        { file: positionals[0]!, config: str(values.config), allowMassRemoval: values['allow-mass-removal'] === true, json: values.json === true },
        ctx,
      );
    }
    case 'sync': {
      const { values } = parse(rest, { 'allow-mass-removal': { type: 'boolean' } }, []);
      return runSync(
        { config: str(values.config), allowMassRemoval: values['allow-mass-removal'] === true, isTty: process.stderr.isTTY === true },
        ctx,
      );
    }
    case 'relock':
      return runRelock({ config: str(parse(rest, {}, []).values.config) }, ctx);
    case 'reader': {
      const [sub, ...readerArgs] = rest;
      if (sub !== 'keyset') throw new UsageError('usage: door-agent reader keyset [--door UUID] [--config F]');
      const { values } = parse(readerArgs, { door: { type: 'string' } }, []);
      return runReaderKeyset({ config: str(values.config), door: str(values.door) }, ctx);
    }
    case 'service': {
      if (rest[0] === 'key') {
        const [, sub, ...keyArgs] = rest;
        if (sub !== 'create') throw new UsageError('usage: door-agent service key create --rank REGULAR|ADMIN|SUPER|DOOR [--expires-days N]');
        const { values } = parse(keyArgs, { rank: { type: 'string' }, 'expires-days': { type: 'string' } }, []);
        return runServiceKeyCreate({ rank: str(values.rank), expiresDays: str(values['expires-days']), config: str(values.config) }, ctx);
      }
      if (rest[0] === 'outbox') return runServiceOutbox({ config: str(parse(rest.slice(1), {}, []).values.config) }, ctx);
      return runService({ config: str(parse(rest, {}, []).values.config) }, ctx, processHooks);
    }
    case 'config': {
      const [sub, ...configArgs] = rest;
      if (sub !== 'check') throw new UsageError('usage: door-agent config check [--config F]');
      return runConfigCheck({ config: str(parse(configArgs, {}, []).values.config) }, ctx);
    }
    case 'version':
    case '--version': {
      ctx.stdout.write(`${VERSION}\n`);
      return 0;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      ctx.stdout.write(HELP);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}; run door-agent --help`);
  }
}

async function run(): Promise<void> {
  const ctx: CommandContext = { env: process.env, stdout, stderr: process.stderr, clock: systemClock };
  let code: number;
  try {
    code = await main(process.argv.slice(2), ctx);
  } catch (err) {
    if (err instanceof DoorAgentError) {
      process.stderr.write(`door-agent: ${err.message}\n`);
      code = err.exitCode;
    } else {
      process.stderr.write(`door-agent: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      code = 1;
    }
  }
  // Every command has finished its work when main returns, but a pipe (door-agent events | cat) may still
  // hold output in Node's buffer: wait for it to drain. Exiting then also ends what a long-running command
  // left open (sockets, timers).
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  if (stdout.error) {
    process.stderr.write(`door-agent: cannot write the output: ${stdout.error.message}\n`);
    code = code === 0 ? 1 : code;
  }
  process.exit(code);
}

/** Resolves once everything written to `stream` so far has been handed to the OS (or the reader went away). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || stream.writableEnded) return resolve();
    stream.once('error', () => resolve());
    stream.write('', () => resolve());
  });
}

await run();
