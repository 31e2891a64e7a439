import { SMTPServer } from 'smtp-server';
import { freePort } from './net.js';

export interface ReceivedMail {
  to: string;
  /** The message as it came over SMTP: headers and body, the body quoted-printable as the mailer sent it. */
  text: string;
}

/** A real SMTP server on loopback that keeps every mail it receives (no TLS, no login), for a test to read. */
export class SmtpSink {
  readonly mail: ReceivedMail[] = [];
  port = 0;
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData: (stream, session, callback) => {
      let text = '';
      stream.on('data', (d: Buffer) => (text += d.toString()));
      stream.on('end', () => {
        for (const rcpt of session.envelope.rcptTo) this.mail.push({ to: rcpt.address, text });
        callback();
      });
    },
  });

  /** Listens on a free loopback port; resolves with the URL for server.smtp. */
  async start(): Promise<string> {
    this.port = await freePort();
    await new Promise<void>((r) => this.server.listen(this.port, '127.0.0.1', () => r()));
    return `smtp://127.0.0.1:${this.port}`;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** The console's sign-in link in a mail's text as received (quoted-printable: soft line breaks, "=" as =3D). */
export function signInLinkIn(text: string): string | undefined {
  const decoded = text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return /(\S+\/console\/signin\/link\?token=[A-Za-z0-9_-]{43})/.exec(decoded)?.[1];
}
