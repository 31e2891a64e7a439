import type { Problem } from './issues.js';
import { renderProblems } from './issues.js';

/** Exit code for an invalid configuration (sysexits EX_CONFIG); systemd: RestartPreventExitStatus=78. */
export const EXIT_INVALID_CONFIG = 78;

/** An error meant for an operator: the message says what happened and what to do. */
export class DoorAgentError extends Error {
  readonly exitCode: number;
  constructor(message: string, options: { cause?: unknown; exitCode?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DoorAgentError';
    this.exitCode = options.exitCode ?? 1;
  }
}

/** Wrong command-line usage (exit 2). */
export class UsageError extends DoorAgentError {
  constructor(message: string) {
    super(message, { exitCode: 2 });
    this.name = 'UsageError';
  }
}

/** An input (config, snapshot) with problems, each located by its path. */
export class InputError extends DoorAgentError {
  readonly problems: Problem[];
  constructor(
    readonly what: string,
    problems: Problem[],
    exitCode = 1,
  ) {
    super(`${what}:\n${renderProblems(problems)}`, { exitCode });
    this.name = 'InputError';
    this.problems = problems;
  }
}

export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

/** Short reason for a filesystem error, e.g. "no such file" for ENOENT. */
export function describeFsError(err: unknown): string {
  switch (errorCode(err)) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    default:
      return err instanceof Error ? err.message : String(err);
  }
}
