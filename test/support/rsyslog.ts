import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForPort, type TlsFiles } from './mosquitto.js';
import { freePort } from './net.js';
import { stopChild } from './process.js';

/** rsyslogd (Debian: /usr/sbin), undefined when it is not installed. */
const RSYSLOGD = ['/usr/sbin/rsyslogd', '/usr/bin/rsyslogd'].find((p) => existsSync(p));
/** rsyslog's GnuTLS stream driver (Debian's rsyslog-gnutls). */
const GTLS_DRIVER = [
  '/usr/lib/x86_64-linux-gnu/rsyslog/lmnsd_gtls.so',
  '/usr/lib/aarch64-linux-gnu/rsyslog/lmnsd_gtls.so',
  '/usr/lib/rsyslog/lmnsd_gtls.so',
].find((p) => existsSync(p));

/** One message as rsyslog received and parsed it (written back with RSYSLOG_SyslogProtocol23Format). */
export interface ReceivedMessage {
  pri: number;
  timestamp: string;
  hostname: string;
  appName: string;
  procId: string;
  msgId: string;
  /** Each SD-ELEMENT's parameters by SD-ID, the PARAM-VALUEs unescaped. */
  sd: Record<string, Record<string, string>>;
  msg: string;
  /** The line as written. */
  line: string;
}

/** RFC 5424's structured data as a receiver reads it (section 6.3): `\"`, `\\` and `\]` unescaped in values. */
function parseStructuredData(text: string): { sd: Record<string, Record<string, string>>; rest: string } {
  const sd: Record<string, Record<string, string>> = {};
  if (text.startsWith('-')) return { sd, rest: text.slice(1) };
  let i = 0;
  while (text[i] === '[') {
    const id = /^\[([^= \]"]{1,32})/.exec(text.slice(i));
    if (!id) throw new Error(`no SD-ID at ${i}: ${text}`);
    i += id[0].length;
    const params: Record<string, string> = {};
    while (text[i] === ' ') {
      const name = /^ ([^= \]"]{1,32})="/.exec(text.slice(i));
      if (!name) throw new Error(`no PARAM-NAME at ${i}: ${text}`);
      i += name[0].length;
      let value = '';
      for (;;) {
        const c = text[i++];
        if (c === undefined) throw new Error(`an unterminated PARAM-VALUE: ${text}`);
        if (c === '\\' && (text[i] === '"' || text[i] === '\\' || text[i] === ']')) value += text[i++];
        else if (c === '"') break;
        else value += c;
      }
      params[name[1]!] = value;
    }
    if (text[i] !== ']') throw new Error(`an SD-ELEMENT not closed at ${i}: ${text}`);
    i++;
    sd[id[1]!] = params;
  }
  return { sd, rest: text.slice(i) };
}

/** A line of the RSYSLOG_SyslogProtocol23Format template, parsed. */
function parseReceived(line: string): ReceivedMessage {
  const header = /^<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) /.exec(line);
  if (!header) throw new Error(`not an RFC 5424 line: ${line}`);
  const { sd, rest } = parseStructuredData(line.slice(header[0].length));
  const [, pri, timestamp, hostname, appName, procId, msgId] = header;
  return {
    pri: Number(pri),
    timestamp: timestamp!,
    hostname: hostname!,
    appName: appName!,
    procId: procId!,
    msgId: msgId!,
    sd,
    msg: rest.replace(/^ /, ''),
    line,
  };
}

/**
 * A real rsyslogd (Debian's rsyslog and rsyslog-gnutls) receiving RFC 5425 syslog over TLS (imtcp with the gtls
 * stream driver, `StreamDriver.Mode 1`, clients anonymous) on a free loopback port, in the test's directory, writing
 * every message it takes to a file with RSYSLOG_SyslogProtocol23Format (the whole RFC 5424 message). Stopped by the
 * test; the system's rsyslog is never used.
 */
export class Rsyslog {
  private process: ChildProcess | null = null;
  port = 0;
  readonly file: string;

  constructor(
    private readonly dir: string,
    /** The server's certificate and key, and the CA of the clients (unused with anonymous clients). */
    private readonly tls: TlsFiles,
    /** Clients must show a certificate the CA signed (`x509/certvalid`); default anonymous clients. */
    private readonly clientCertificates = false,
  ) {
    if (!RSYSLOGD || !GTLS_DRIVER)
      throw new Error(
        'rsyslog and its TLS driver are required for the syslog tests: apt-get install rsyslog rsyslog-gnutls (npm test installs them when run as root)',
      );
    mkdirSync(join(dir, 'work'), { recursive: true });
    this.file = join(dir, 'received.log');
  }

  get url(): string {
    return `tls://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) return;
    if (this.port === 0) this.port = await freePort();
    const conf = join(this.dir, 'rsyslog.conf');
    writeFileSync(
      conf,
      `global(
  workDirectory="${join(this.dir, 'work')}"
  maxMessageSize="64k"
  defaultNetstreamDriver="gtls"
  defaultNetstreamDriverCAFile="${this.tls.ca}"
  defaultNetstreamDriverCertFile="${this.tls.cert}"
  defaultNetstreamDriverKeyFile="${this.tls.key}"
)
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="${this.clientCertificates ? 'x509/certvalid' : 'anon'}")
input(type="imtcp" port="${this.port}" address="127.0.0.1")
action(type="omfile" file="${this.file}" template="RSYSLOG_SyslogProtocol23Format")
`,
    );
    const proc = spawn(RSYSLOGD!, ['-n', '-f', conf, '-i', join(this.dir, 'rsyslogd.pid')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    this.process = proc;
    try {
      await waitForPort(this.port, 10_000);
    } catch (err) {
      throw new Error(`rsyslogd did not listen: ${stderr || (err as Error).message}`);
    }
  }

  /** SIGTERM, and wait: rsyslog writes what it has taken before it exits. */
  async stop(): Promise<void> {
    const proc = this.process;
    this.process = null;
    await stopChild(proc);
  }

  /** Freezes it (SIGSTOP): connections stay open, nothing is read; what is sent piles up in its socket. */
  freeze(): void {
    this.process?.kill('SIGSTOP');
  }

  /** SIGKILL, as a crash: what it had taken but not yet written is lost, and its connections are reset. */
  async kill(): Promise<void> {
    const proc = this.process;
    this.process = null;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    proc.kill('SIGCONT');
    await exited;
  }

  /**
   * Every message written so far, parsed. After a kill the file may end in a line cut short, which the next
   * rsyslogd continues: a fragment that is not a whole message was not received, and is left out.
   */
  received(): ReceivedMessage[] {
    if (!existsSync(this.file)) return [];
    const messages: ReceivedMessage[] = [];
    for (const line of readFileSync(this.file, 'utf8').split(/\n|(?=<\d{1,3}>1 \d{4}-\d\d-\d\dT)/)) {
      if (line === '') continue;
      try {
        messages.push(parseReceived(line));
      } catch {
        // A fragment cut by a kill.
      }
    }
    return messages;
  }
}
