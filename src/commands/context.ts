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

export function configPath(flag: string | undefined, env: Env): string {
  return flag ?? (env.DOOR_AGENT_CONFIG || undefined) ?? DEFAULT_CONFIG_PATH;
}

export function loadConfigFor(flag: string | undefined, ctx: CommandContext): AgentOptions {
  return loadConfig(configPath(flag, ctx.env));
}
