#!/usr/bin/env node
import { parseArgs } from 'node:util';
import type { CommandContext, ProcessHooks } from './commands/context.js';
import { COMMANDS } from './commands/registry.js';
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
  if (parsed.positionals.length < spec.required || parsed.positionals.length > spec.positionals.length) {
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

/** Runs argv's command: its words name it (commands/usage.ts), commands/registry.ts imports its module. */
export async function main(argv: string[], ctx: CommandContext): Promise<number> {
  const [first, ...rest] = argv;
  if (first === 'help') return help(rest, ctx);
  if (first === 'version' || first === '--version') {
    ctx.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (first === undefined) {
    ctx.stdout.write(topLevelHelp());
    return 2;
  }
  if (first === '--help' || first === '-h') return help(rest, ctx);
  const words = commandWords(argv);
  if (words.length === 0) throw new UsageError(`unknown command ${JSON.stringify(first)}; run door-agent --help`);
  if (wantsHelp(argv.slice(words.length))) return help(words, ctx);
  const name = words.join(' ');
  const load = COMMANDS[name];
  // `door-agent service key`: the start of a command, not one.
  if (!load)
    throw new UsageError(
      usagesUnder(words)
        .map((usage) => usageLine(usage.name))
        .join('\n'),
    );
  const { values, positionals } = parse(name, argv.slice(words.length));
  const command = await load();
  return command({
    options: values,
    positionals,
    ctx,
    hooks: processHooks,
    outputHooks: { ...processHooks, onStopSignal: stopSignalsOrReaderGone },
    stdin: process.stdin,
    stderrIsTty: process.stderr.isTTY === true,
    stdoutIsTty: process.stdout.isTTY === true,
  });
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
