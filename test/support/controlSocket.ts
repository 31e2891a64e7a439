import { connect } from 'node:net';

/**
 * Bytes sent on the daemon's control socket as any program could send them (docs/local-control.md): the reply
 * lines it answers with, parsed, once it closes the connection.
 */
export function rawControlRequest(socketPath: string, ...chunks: Array<string | Buffer>): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path: socketPath });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.once('error', reject);
    socket.once('close', () =>
      resolve(
        text.trim() === ''
          ? []
          : text
              .trim()
              .split('\n')
              .map((l) => JSON.parse(l) as Record<string, unknown>),
      ),
    );
    for (const chunk of chunks) socket.write(chunk);
  });
}
