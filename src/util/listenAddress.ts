import { DoorAgentError, errorCode } from './errors.js';

/** A configured HOST:PORT (`127.0.0.1:8080`, `[::1]:9464`) as node:net takes it. */
export function splitListen(listen: string): { host: string; port: number } {
  const separator = listen.lastIndexOf(':');
  return { host: listen.slice(0, separator).replace(/^\[|\]$/g, ''), port: Number(listen.slice(separator + 1)) };
}

/** Whether a listen host (or a bound address) is every address of the machine: no one origin can be told from it. */
export function isWildcardHost(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '::' || host === '0:0:0:0:0:0:0:0';
}

/**
 * A listener that could not start, as an operator reads it (exit 1: another program may free the port, so
 * systemd's restart may help): the address, the key it came from, the reason and what to do.
 */
export function cannotListen(err: unknown, listen: string, key: string): DoorAgentError {
  const code = errorCode(err);
  const hint =
    code === 'EADDRINUSE'
      ? `: another program already listens there (stop it, or change ${key})`
      : code === 'EADDRNOTAVAIL'
        ? `: this machine has no such address (change ${key})`
        : code === 'EACCES'
          ? ': permission denied (ports below 1024 need privileges; use a higher port)'
          : '';
  const reason = err instanceof Error ? err.message : String(err);
  return new DoorAgentError(`cannot listen on ${listen} (${key}): ${reason}${hint}`, { cause: err });
}
