import type { Env } from '../util/secretFiles.js';
import { DEFAULT_CONFIG_PATH, loadConfig } from '../config/load.js';
import type { AgentOptions } from '../config/options.js';
import type { Clock } from '../util/clock.js';

export interface Output {
  /** false: buffered past the high-water mark; wait for 'drain' (as a Node stream). */
  write(text: string): unknown;
  once?(event: 'drain', listener: () => void): unknown;
}

/** What a command may use of the outside world; cli.ts builds it from the process. */
export interface CommandContext {
  env: Env;
  stdout: Output;
  stderr: Output;
  clock: Clock;
}

/** Hooks the process gives the long-running commands: signals to stop on, and a handler for fatal errors. */
export interface ProcessHooks {
  onStopSignal(handler: (signal: string) => void): void;
  onFatal(handler: (err: unknown) => void): void;
  /** Ends the process as a fatal error would (the onFatal handler runs, exit code 1). */
  raiseFatal(err: unknown): void;
}

/** What cli.ts hands a command: its arguments as parsed with its usage (commands/usage.ts), the outside world, the process. */
export interface CommandInput {
  options: Record<string, string | boolean | undefined>;
  positionals: string[];
  ctx: CommandContext;
  hooks: ProcessHooks;
  /** The hooks of a command whose output is its purpose: it also stops when nobody reads any more (door-agent events | head). */
  outputHooks: ProcessHooks;
  stdin: NodeJS.ReadableStream;
  /** stderr is a terminal (progress is drawn in place). */
  stderrIsTty: boolean;
  /** stdout is a terminal (a daemon's log in its pretty form: docs/logging.md). */
  stdoutIsTty: boolean;
}

/** A command's entry (commands/registry.ts): resolves with the exit code. */
export type Command = (input: CommandInput) => number | Promise<number>;

/** A string option's value (`--config F`), undefined when not given. */
export function stringOption(input: CommandInput, name: string): string | undefined {
  const value = input.options[name];
  return typeof value === 'string' ? value : undefined;
}

export function configPath(flag: string | undefined, env: Env): string {
  return flag ?? (env.DOOR_AGENT_CONFIG || undefined) ?? DEFAULT_CONFIG_PATH;
}

export function loadConfigFor(flag: string | undefined, ctx: CommandContext): AgentOptions {
  return loadConfig(configPath(flag, ctx.env), ctx.env);
}
