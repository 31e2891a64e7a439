import { readFileSync } from 'node:fs';
import { connect as connectTcp, isIP, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import { backoffDelay, type BackoffOptions } from '../util/backoff.js';
import type { Clock, Timers } from '../util/clock.js';
import type { SyslogOptions } from './options.js';
import { syslogFrame, syslogMessage, type AuditWireEvent, type SyslogFormat } from './syslog.js';

/** One event to send, with its place in the source (an increasing number: the service's event_id, the agent's seq). */
export interface SyslogRow {
  cursor: number;
  agent: string;
  event: AuditWireEvent;
}

/**
 * Where the events come from, and where the sender notes how far it is sure of: the database itself is the queue
 * (docs/audit.md), so nothing waits in memory but the batch being sent.
 */
export interface SyslogSource {
  /** The last cursor confirmed (0: none yet): sending starts after it. */
  confirmedCursor(): Promise<number>;
  /** The rows after `cursor`, in order, at most `limit`. */
  after(cursor: number, limit: number): Promise<SyslogRow[]>;
  /** Every row up to `cursor` reached the receiver (as far as TCP can tell): never sent again. */
  confirmed(cursor: number): Promise<void>;
}

export interface SyslogSenderOptions {
  syslog: SyslogOptions;
  /** HOSTNAME when `syslog.hostname` is not set: the agent's id, or the service machine's host name. */
  defaultHostname: string;
  source: SyslogSource;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** A write is sure once the connection has stayed up this long after it (TCP has no acknowledgement). */
  settleMs?: number;
  /** How often the source is asked for new events while it has none. */
  pollMs?: number;
  random?: () => number;
}

/** At most this many events in memory, sent as one write. */
const BATCH = 200;
const SETTLE_MS = 5000;
const POLL_MS = 1000;
/** A receiver that takes no byte for this long (its window full) is taken as gone: reconnect. */
const WRITE_TIMEOUT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 15_000;
const RECONNECT: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0.5 };
const DEFAULT_TLS_PORT = 6514;

/** TLS certificate errors: the receiver is not the one caFile vouches for. */
const CERTIFICATE_ERRORS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** An error in words for the log: a certificate refusal says what it means. */
function describe(err: unknown): string {
  const { message, code } = err as { message?: string; code?: string };
  if (code !== undefined && CERTIFICATE_ERRORS.has(code))
    return `its certificate is refused (${message ?? code}): it must be signed by syslog.caFile and name the host (or syslog.serverName); nothing is sent to it`;
  return message ?? String(err);
}

/** The URL's scheme, host and port (the config checked its form). @internal */
export function parseSyslogUrl(url: string): { tls: boolean; host: string; port: number } {
  const match = /^(tls|tcp):\/\/(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+))(?::(\d{1,5}))?$/.exec(url);
  if (!match) throw new Error(`not a syslog URL: ${url}`);
  const [, scheme, v6, name, port] = match;
  return { tls: scheme === 'tls', host: v6 ?? name ?? '', port: port === undefined ? DEFAULT_TLS_PORT : Number(port) };
}

/**
 * Sends every event of a source to a syslog receiver, in order, at least once (docs/audit.md, "SIEM export"):
 * a batch at a time over one connection (TLS, or TCP on loopback), each row's cursor confirmed to the source once
 * the connection has stayed up `settleMs` after its write; after a break it reconnects with backoff and jitter and
 * sends again from the last confirmed cursor. Never blocks its caller; logs an outage once (warn) and its end (info).
 */
export class SyslogSender implements Component {
  readonly name = 'syslog';
  private readonly format: SyslogFormat;
  private readonly settleMs: number;
  private readonly pollMs: number;
  private running = false;
  private loop: Promise<void> | null = null;
  private socket: Socket | null = null;
  /** Wakes the loop's current wait (a stop, a break; new events only a poll's wait, never a backoff). */
  private wake: (() => void) | null = null;
  private polling = false;
  /** Since when (monotonic ms) the receiver is unreachable, logged once; null: it is reachable, or never tried. */
  private downSince: number | null = null;
  private sourceFailing = false;
  private attempt = 0;
  private confirmedUpTo = 0;
  /** Writes flushed to the kernel and not yet confirmed: their last cursor and when. */
  private unconfirmed: Array<{ cursor: number; sentAt: number }> = [];

  constructor(private readonly options: SyslogSenderOptions) {
    const { syslog } = options;
    this.format = {
      format: syslog.format,
      facility: syslog.facility,
      enterpriseId: syslog.enterpriseId,
      hostname: syslog.hostname ?? options.defaultHostname,
    };
    this.settleMs = options.settleMs ?? SETTLE_MS;
    this.pollMs = options.pollMs ?? POLL_MS;
  }

  /** Starts sending in the background: the receiver's state never delays the caller. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run().catch((err: unknown) => this.options.logger.error({ err }, 'syslog export stopped by an error'));
  }

  /** Stops: the connection closed, nothing confirmed that was not sure (what was sent since is sent again next time). */
  async stop(): Promise<void> {
    this.running = false;
    this.socket?.destroy();
    this.wake?.();
    await this.loop;
    this.loop = null;
  }

  /** New events are in the source: sent now rather than at the next poll (a reconnection keeps its backoff). */
  notify(): void {
    if (this.polling) this.wake?.();
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    while (this.running) {
      try {
        this.confirmedUpTo = await this.options.source.confirmedCursor();
        break;
      } catch (err) {
        this.sourceFailed(err);
        await this.wait(this.pollMs);
      }
    }
    while (this.running) {
      let socket: Socket;
      try {
        socket = await this.connect();
      } catch (err) {
        this.unreachable(err);
        await this.wait(backoffDelay(this.attempt++, RECONNECT, this.options.random));
        continue;
      }
      if (!this.running) {
        socket.destroy();
        break;
      }
      const { url } = this.options.syslog;
      if (this.downSince === null) logger.info({ url }, 'sending audit events to the syslog receiver');
      else {
        logger.info(
          { url, seconds: Math.round((this.options.clock.monoNow() - this.downSince) / 1000) },
          'the syslog receiver is back: sending the events that waited',
        );
        this.downSince = null;
      }
      this.attempt = 0;
      const error = await this.stream(socket);
      if (!this.running) break;
      this.unreachable(error);
      await this.wait(backoffDelay(this.attempt++, RECONNECT, this.options.random));
    }
  }

  /** Logs an outage once (until the receiver is back). */
  private unreachable(err: unknown): void {
    if (this.downSince !== null || !this.running) return;
    this.downSince = this.options.clock.monoNow();
    this.options.logger.warn(
      { url: this.options.syslog.url, error: describe(err) },
      'the syslog receiver cannot be reached: audit events wait in the database and are sent in order when it is back',
    );
  }

  private sourceFailed(err: unknown): void {
    if (this.sourceFailing) return;
    this.sourceFailing = true;
    this.options.logger.warn({ err }, 'syslog export cannot read the audit events: trying again');
  }

  /** Resolves after `ms`, or at once when woken (by `notify` too when `poll`). */
  private wait(ms: number, poll = false): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.wake = null;
        this.polling = false;
        resolve();
      };
      const timer = this.options.timers.setTimeout(done, ms);
      this.polling = poll;
      this.wake = () => {
        this.options.timers.clearTimeout(timer);
        done();
      };
    });
  }

  /** A connection, TLS (the CA pinned when caFile is set) or TCP; files read at each attempt, so a renewed one is taken. */
  private connect(): Promise<Socket> {
    const { syslog } = this.options;
    const { tls, host, port } = parseSyslogUrl(syslog.url);
    return new Promise((resolve, reject) => {
      let socket: Socket;
      try {
        if (tls) {
          socket = connectTls({
            host,
            port,
            // A name for SNI and the certificate check; an address is checked against the certificate's IP entries.
            ...(syslog.serverName !== undefined ? { servername: syslog.serverName } : isIP(host) === 0 ? { servername: host } : {}),
            ...(syslog.caFile !== undefined ? { ca: readFileSync(syslog.caFile) } : {}),
            ...(syslog.certFile !== undefined && syslog.keyFile !== undefined
              ? { cert: readFileSync(syslog.certFile), key: readFileSync(syslog.keyFile) }
              : {}),
            rejectUnauthorized: true,
            minVersion: 'TLSv1.2',
          });
        } else socket = connectTcp({ host, port });
      } catch (err) {
        reject(err);
        return;
      }
      this.socket = socket;
      const timer = this.options.timers.setTimeout(() => socket.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
      const failed = (err: Error) => {
        this.options.timers.clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      // Destroyed without an error (a stop): closed, no 'error'.
      const closed = () => failed(new Error('the connection closed before it was set up'));
      socket.once('error', failed);
      socket.once('close', closed);
      socket.once(tls ? 'secureConnect' : 'connect', () => {
        this.options.timers.clearTimeout(timer);
        socket.off('error', failed);
        socket.off('close', closed);
        socket.setKeepAlive(true, 30_000);
        resolve(socket);
      });
    });
  }

  /** Sends from the last confirmed cursor until the connection breaks (its error) or the sender stops. */
  private async stream(socket: Socket): Promise<unknown> {
    let broken: unknown = null;
    const onBreak = (err?: unknown) => {
      broken ??= err ?? new Error('the receiver closed the connection');
      this.wake?.();
    };
    socket.on('error', onBreak);
    socket.once('close', () => onBreak());
    // Receivers send nothing; a TLS close_notify or FIN ends the connection.
    socket.once('end', () => onBreak());
    socket.resume();
    let cursor = this.confirmedUpTo;
    this.unconfirmed = [];
    try {
      while (this.running && broken === null) {
        await this.confirmSettled(socket, () => broken === null);
        let rows: SyslogRow[];
        try {
          rows = await this.options.source.after(cursor, BATCH);
          this.sourceFailing = false;
        } catch (err) {
          this.sourceFailed(err);
          await this.wait(this.pollMs);
          continue;
        }
        if (broken !== null) break;
        if (rows.length === 0) {
          await this.wait(this.pollMs, true);
          continue;
        }
        const frames = Buffer.concat(rows.map((row) => syslogFrame(syslogMessage(row.event, row.agent, this.format))));
        const written = await this.write(socket, frames);
        if (written !== null) {
          onBreak(written);
          break;
        }
        cursor = rows.at(-1)!.cursor;
        this.unconfirmed.push({ cursor, sentAt: this.options.clock.monoNow() });
      }
    } finally {
      socket.destroy();
      if (this.socket === socket) this.socket = null;
      // Whatever was not confirmed is sent again after the next connect.
      this.unconfirmed = [];
    }
    return broken;
  }

  /** Resolves once `frames` are handed to the kernel (null), or with the error that broke the connection. */
  private write(socket: Socket, frames: Buffer): Promise<unknown> {
    return new Promise((resolve) => {
      const timer = this.options.timers.setTimeout(() => {
        const err = new Error(`the receiver took nothing for ${WRITE_TIMEOUT_MS / 1000} s`);
        socket.destroy(err);
        resolve(err);
      }, WRITE_TIMEOUT_MS);
      socket.write(frames, (err) => {
        this.options.timers.clearTimeout(timer);
        resolve(err ?? null);
      });
    });
  }

  /** Confirms the writes made more than settleMs ago, while the connection is still up. */
  private async confirmSettled(socket: Socket, up: () => boolean): Promise<void> {
    const settledBefore = this.options.clock.monoNow() - this.settleMs;
    let last = -1;
    while (this.unconfirmed.length > 0 && this.unconfirmed[0]!.sentAt <= settledBefore) last = this.unconfirmed.shift()!.cursor;
    if (last < 0 || !up() || socket.destroyed) return;
    try {
      await this.options.source.confirmed(last);
      this.confirmedUpTo = last;
    } catch (err) {
      this.sourceFailed(err);
    }
  }
}
