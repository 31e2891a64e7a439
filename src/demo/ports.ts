import type { AddressInfo, Server } from 'node:net';

/** Whether an error (or the error it wraps, as startService's does) is "address already in use". */
function addressInUse(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') return true;
  return false;
}

/**
 * Starts something on its usual port, or, when another program holds that port (Debian's mosquitto on 1883),
 * on one the system picks. The real server binds port 0 itself: no probe socket, so no port to lose between a
 * probe and the bind.
 */
export async function onPreferredPort<T>(preferred: number, start: (port: number) => Promise<T>): Promise<{ started: T; busy: boolean }> {
  try {
    return { started: await start(preferred), busy: false };
  } catch (err) {
    if (!addressInUse(err)) throw err;
    return { started: await start(0), busy: true };
  }
}

/** Listens on loopback at `port` (0: any free one); resolves with the port taken. */
export function listenLoopback(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err);
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => {
      server.removeListener('error', failed);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
