import { spawn, type ChildProcess } from 'node:child_process';

export interface Notification {
  /** Receive time, monotonic ms of the receiver (python3's time.monotonic). */
  at: number;
  state: string;
}

/**
 * A systemd-style NOTIFY_SOCKET owned by the test: a Unix datagram socket (Node has none, so a python3 child
 * binds it) that timestamps each datagram on arrival, independently of the process under test.
 */
export class NotifySocket {
  readonly received: Notification[] = [];
  private readonly child: ChildProcess;
  private readonly listening: Promise<void>;

  constructor(readonly path: string) {
    const script = [
      'import socket, sys, time',
      's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
      's.bind(sys.argv[1])',
      'print("listening", flush=True)',
      'while True:',
      '    data = s.recv(4096)',
      '    print("%.1f %s" % (time.monotonic() * 1000, data.decode()), flush=True)',
    ].join('\n');
    this.child = spawn('python3', ['-c', script, path], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buffer = '';
    this.listening = new Promise((resolve, reject) => {
      this.child.once('error', (err) => reject(new Error(`the NOTIFY_SOCKET test receiver needs python3 (apt-get install python3): ${err.message}`)));
      this.child.stdout!.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        for (const line of lines) {
          if (line === 'listening') resolve();
          else {
            const space = line.indexOf(' ');
            this.received.push({ at: Number(line.slice(0, space)), state: line.slice(space + 1) });
          }
        }
      });
    });
  }

  ready(): Promise<void> {
    return this.listening;
  }

  states(): string[] {
    return this.received.map((n) => n.state);
  }

  close(): void {
    this.child.kill('SIGKILL');
  }
}
