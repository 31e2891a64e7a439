#!/usr/bin/env node
import { parseArgs } from 'node:util';
import type { CommandContext } from './commands/context.js';
import type { ProcessHooks } from './commands/run.js';
import { commandHelp, commandWords, findUsage, parserSpec, topLevelHelp, usageLine, usagesUnder } from './commands/usage.js';
import { systemClock } from './util/clock.js';
import { DoorAgentError, UsageError } from './util/errors.js';
import { count } from './util/plural.js';
import { ReaderOutput } from './util/readerOutput.js';
import { VERSION } from './version.js';

/** Parses a command's arguments with the options its usage lists (commands/usage.ts); a mistake ends with its usage line. */
function parse(name: string, argv: string[]) {
  const usage = findUsage(name)!;
  const spec = parserSpec(usage);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: spec.options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.replace(/\. To specify.*$/s, '')}\n${usageLine(name)}`);
  }
  if (parsed.positionals.length !== spec.positionals.length) {
    const expected = spec.positionals.length === 0 ? 'no arguments' : spec.positionals.join(' ');
    throw new UsageError(`expected ${expected}, got ${count(parsed.positionals.length, 'argument')}\n${usageLine(name)}`);
  }
  return { values: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals };
}

/** --help or -h anywhere before a `--`. */
function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** `door-agent help [command...]`, `door-agent <command> --help`: to stdout, exit 0. */
function help(words: readonly string[], ctx: CommandContext): number {
  if (words.length === 0) {
    ctx.stdout.write(topLevelHelp());
    return 0;
  }
  const usages = usagesUnder(words);
  if (usages.length === 0) throw new UsageError(`unknown command ${JSON.stringify(words.join(' '))}; run door-agent --help`);
  ctx.stdout.write(usages.map(commandHelp).join('\n'));
  return 0;
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

// Each command's module is imported when it runs: `status` or `check` need neither the MQTT client nor the HTTP
// server, and a CLI start on a Pi-class board is mostly module loading.
export async function main(argv: string[], ctx: CommandContext): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'help') return help(rest, ctx);
  if (command !== undefined && !command.startsWith('-') && wantsHelp(rest)) {
    const words = commandWords(argv);
    if (words.length === 0) throw new UsageError(`unknown command ${JSON.stringify(command)}; run door-agent --help`);
    return help(words, ctx);
  }
  switch (command) {
    case 'demo': {
      const { values } = parse('demo', rest);
      return (await import('./commands/demo.js')).runDemo(
        { dir: str(values.dir) },
        ctx,
        { ...processHooks, onStopSignal: stopSignalsOrReaderGone },
        process.stdin,
      );
    }
    case 'run':
      return (await import('./commands/run.js')).runDaemon({ config: str(parse('run', rest).values.config) }, ctx, processHooks);
    case 'status': {
      const { values } = parse('status', rest);
      return (await import('./commands/status.js')).runStatus({ json: values.json === true, config: str(values.config) }, ctx);
    }
    case 'events': {
      const { values } = parse('events', rest);
      const stopped = new Promise<void>((resolve) => stopSignalsOrReaderGone(() => resolve()));
      return (await import('./commands/events.js')).runEvents(
        { since: str(values.since), follow: values.follow === true, config: str(values.config) },
        ctx,
        stopped,
      );
    }
    case 'check': {
      const { values, positionals } = parse('check', rest);
      return (await import('./commands/check.js')).runCheck(
        { credential: positionals[0]!, kind: str(values.kind), door: str(values.door), at: str(values.at), config: str(values.config) },
        ctx,
      );
    }
    case 'import': {
      const { values, positionals } = parse('import', rest);
      return (await import('./commands/import.js')).runImport(
        { file: positionals[0]!, config: str(values.config), allowMassRemoval: values['allow-mass-removal'] === true, json: values.json === true },
        ctx,
      );
    }
    case 'sync': {
      const { values } = parse('sync', rest);
      return (await import('./commands/sync.js')).runSync(
        { config: str(values.config), allowMassRemoval: values['allow-mass-removal'] === true, isTty: process.stderr.isTTY === true },
        ctx,
      );
    }
    case 'relock':
      return (await import('./commands/relock.js')).runRelock({ config: str(parse('relock', rest).values.config) }, ctx);
    case 'reader': {
      const [sub, ...readerArgs] = rest;
      if (sub !== 'keyset') throw new UsageError(usageLine('reader keyset'));
      const { values } = parse('reader keyset', readerArgs);
      return (await import('./commands/readerKeyset.js')).runReaderKeyset({ config: str(values.config), door: str(values.door) }, ctx);
    }
    case 'service': {
      if (rest[0] === 'key') {
        const [, sub, ...keyArgs] = rest;
        if (sub !== 'create') throw new UsageError(usageLine('service key create'));
        const { values } = parse('service key create', keyArgs);
        return (await import('./commands/service.js')).runServiceKeyCreate(
          { rank: str(values.rank), expiresDays: str(values['expires-days']), config: str(values.config) },
          ctx,
        );
      }
      if (rest[0] === 'outbox')
        return (await import('./commands/service.js')).runServiceOutbox({ config: str(parse('service outbox', rest.slice(1)).values.config) }, ctx);
      return (await import('./commands/service.js')).runService({ config: str(parse('service', rest).values.config) }, ctx, processHooks);
    }
    case 'config': {
      const [sub, ...configArgs] = rest;
      if (sub !== 'check') throw new UsageError(usageLine('config check'));
      return (await import('./commands/configCheck.js')).runConfigCheck({ config: str(parse('config check', configArgs).values.config) }, ctx);
    }
    case 'version':
    case '--version': {
      ctx.stdout.write(`${VERSION}\n`);
      return 0;
    }
    case undefined:
      ctx.stdout.write(topLevelHelp());
      return 2;
    case '--help':
    case '-h':
      return help(rest, ctx);
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
