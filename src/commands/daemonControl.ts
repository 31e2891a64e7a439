import { readFileSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname } from 'node:path';
import type { AgentOptions } from '../config/options.js';
import { ControlPermissionError, DaemonUnavailableError, EXIT_DAEMON_UNAVAILABLE, callDaemon } from '../control/client.js';
import type { ControlReply, ControlRequest, FinalReply } from '../control/request.js';
import { dataDirHolder } from '../system/dataDirLock.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import type { CommandContext, CommandInput } from './context.js';

/** The Unix user a request names (claimed: the socket's mode 0660 is the access control; docs/local-control.md). */
export function requester(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? 'unknown'}`;
  }
}

/** A whole number of seconds given as `flag`, or undefined when not given. */
export function secondsOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number of seconds, not ${value}`);
  return Number(value);
}

/** The control socket's path from the configuration; a DaemonUnavailableError when the configuration has none. */
export function controlSocketOf(config: AgentOptions, configFile: string): string {
  const path = config.agent.controlSocket;
  if (path === null) {
    throw new DaemonUnavailableError('', `${configFile} sets agent.controlSocket: null: the daemon has no control socket to reach`, null);
  }
  return path;
}

/** A group's name from /etc/group, else its number. */
function groupName(gid: number): string {
  try {
    const line = readFileSync('/etc/group', 'utf8')
      .split('\n')
      .find((l) => l.split(':')[2] === String(gid));
    return line?.split(':')[0] ?? String(gid);
  } catch {
    return String(gid);
  }
}

/** The group that may open `path`: the socket's, else its directory's (the runtime directory: 0750, the daemon's group). */
function groupOf(path: string): string | null {
  for (const candidate of [path, dirname(path)]) {
    try {
      return groupName(statSync(candidate).gid);
    } catch {
      // not readable by this user: try its directory
    }
  }
  return null;
}

/**
 * The daemon's answer to `request`, with what a user needs when there is none: the daemon not running (exit 69;
 * running without its socket, the log says why), a permission refused (exit 77: the group to be in). Ctrl-C ends the
 * request: the daemon then ends a learn session and still sends its last line.
 */
export async function askDaemon(
  path: string,
  config: AgentOptions,
  request: ControlRequest,
  input: CommandInput,
  onLine: (line: Exclude<ControlReply, FinalReply>) => void = () => {},
  file?: Buffer,
): Promise<FinalReply> {
  const call = callDaemon(path, request, onLine, file);
  input.outputHooks.onStopSignal(() => call.end());
  try {
    return await call.result;
  } catch (err) {
    if (err instanceof ControlPermissionError) {
      const group = groupOf(path);
      throw new DoorAgentError(
        `${err.message}: the control socket is for root and the ${group === null ? "daemon's group" : `group ${group}`} (run with sudo, or add yourself: sudo usermod -aG ${group ?? 'door-agent'} ${requester()}, then log in again)`,
        { cause: err, exitCode: err.exitCode },
      );
    }
    if (err instanceof DaemonUnavailableError) {
      const holder = dataDirHolder(config.agent.dataDir);
      if (holder) {
        throw new DoorAgentError(
          `the door-agent daemon${holder.pid === null ? '' : ` (pid ${holder.pid})`} is running but does not answer on ${path}: its log says why (journalctl -u door-agent)`,
          { cause: err, exitCode: EXIT_DAEMON_UNAVAILABLE },
        );
      }
    }
    throw err;
  }
}

/** A command's end from the daemon's last line: its message on stdout (exit 0), or its error on stderr (exit 1). */
export function printFinal(reply: FinalReply, ctx: CommandContext): number {
  if (reply.type === 'done') {
    ctx.stdout.write(`${reply.message}\n`);
    return 0;
  }
  ctx.stderr.write(`door-agent: ${reply.error}\n`);
  return 1;
}

/** A time of a card shown, as the user's clock reads it (HH:MM:SS). */
export function localTime(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : at.toTimeString().slice(0, 8);
}
