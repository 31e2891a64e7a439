import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import type { Coding, Encoding } from './acceptEncoding.js';
import { compressBody } from './compressBody.js';
import type { DirectoryPlan } from './directory.js';
import { GrowingBody } from './growingBody.js';
import { type Gate, Overloaded } from './loadGate.js';

/** One answer of GET /directory: a plan (revision, full or since) in one form (PINs in clear or masked). */
export interface DirectoryVariant extends DirectoryPlan {
  /** PINs masked: for keys that may not read them. */
  masked: boolean;
}

/** What is sent: the variant's bytes in one encoding, complete or still growing. */
export interface ServedBody {
  encoding: Encoding;
  body: GrowingBody;
}

/** Bodies shorter than this are sent as they are: compressing them saves less than a packet. */
const MIN_COMPRESSED_LENGTH = 1024;
/** Deltas kept per revision, the least recently asked for dropped first. */
const MAX_DELTAS = 32;
/** A delta larger than this is built for the requests that share its build, and not kept. */
const MAX_KEPT_DELTA_BYTES = 8 * 1024 * 1024;

interface Entry {
  variant: DirectoryVariant;
  /** The one build every request for this variant reads, while it grows and once complete. */
  identity: GrowingBody;
  /** Each coding compressed once, when first asked for, from the identity body as it grows. */
  codings: Map<Coding, GrowingBody>;
  lastUsed: number;
}

/** What GET /status shows of the stored bytes. */
export interface DirectoryBytesStatus {
  revision: number | null;
  /** The full answer's sizes (PINs in clear, the doors' form) in each encoding stored; null when none is complete. */
  full: { identity: number; gzip: number | null; br: number | null } | null;
  deltas: number;
  deltaBytes: number;
  /** Bodies built and compressed since the service started. */
  builds: number;
  compressions: number;
}

/**
 * GET /directory's answers as bytes built once per revision (issue 28 item 1: the full directory was built and
 * serialized for every request, 100 ms of CPU each at 10,000 users, and a storm of 100 doors timed out).
 *
 * - One build per variant and revision: the first request starts it, every request for the same variant (also those
 *   arriving while it runs) reads the same growing body (growingBody.ts) from its start. Its gzip and brotli forms
 *   are compressed once, when a client first accepts them, on zlib's thread pool, following the build.
 * - Kept for the current revision only: when a request's plan names another version (the revision moved, or the
 *   history was renewed), everything stored is dropped (requests still reading a dropped body finish it). Kept:
 *   the full answer in the doors' form (PINs in clear) with its compressed forms, and up to 32 deltas of at most
 *   8 MB each; a full answer with PINs masked (keys that may not read PINs, never a door's) is shared by the
 *   requests that come while it is built, then dropped.
 * - Builds and compressions in flight are bounded by `gate` (server.maxDirectoryBuilds): one that cannot start is
 *   refused with Overloaded (503 with Retry-After), never queued.
 */
export class DirectoryBytes {
  private versionKey: string | null = null;
  private revision: number | null = null;
  private history: string | null = null;
  private readonly entries = new Map<string, Entry>();
  private builds = 0;
  private compressions = 0;

  constructor(
    private readonly deps: {
      /** Writes the variant's body into `sink` and ends it (directoryBody.ts). */
      build(variant: DirectoryVariant, sink: GrowingBody): Promise<void>;
      gate: Gate;
      clock: Clock;
      logger: Logger;
      /** Called as each build starts (tests count them); a promise it returns holds the build until it settles. */
      onBuild?: (variant: DirectoryVariant) => void | Promise<void>;
    },
  ) {}

  /** The variant's bytes in `encoding` (identity when a complete body is too short to gain from compression). */
  get(variant: DirectoryVariant, encoding: Encoding): ServedBody {
    const entry = this.entryFor(variant);
    entry.lastUsed = this.deps.clock.monoNow();
    const { identity } = entry;
    if (encoding === 'identity' || (identity.complete && identity.length < MIN_COMPRESSED_LENGTH)) return { encoding: 'identity', body: identity };
    return { encoding, body: this.coded(entry, encoding) };
  }

  /**
   * Whether bytes of a later revision of the same history are stored than `version`'s: a plan made before another
   * request's (its database read answered later) is made again rather than throw the newer bytes away.
   */
  isBehind(version: DirectoryVariant['version']): boolean {
    return this.revision !== null && this.versionKey !== null && this.history === version.history && version.revision < this.revision;
  }

  /**
   * The revision moved (here or in another service process: the change feed): the bytes of older ones are dropped
   * at once (at 250,000 users a full answer and its codings hold some 160 MB) instead of at the next request.
   */
  moveTo(version: DirectoryVariant['version']): void {
    if (this.revision === null || (this.history === version.history && version.revision <= this.revision)) return;
    this.entries.clear();
    this.versionKey = null;
    this.revision = null;
    this.history = null;
  }

  status(): DirectoryBytesStatus {
    let full: DirectoryBytesStatus['full'] = null;
    let deltas = 0;
    let deltaBytes = 0;
    const size = (body: GrowingBody | undefined) => (body?.complete ? body.length : null);
    for (const entry of this.entries.values()) {
      if (!entry.identity.complete) continue;
      if (entry.variant.full) {
        full = { identity: entry.identity.length, gzip: size(entry.codings.get('gzip')), br: size(entry.codings.get('br')) };
      } else {
        deltas++;
        deltaBytes += entry.identity.length;
      }
    }
    return { revision: this.revision, full, deltas, deltaBytes, builds: this.builds, compressions: this.compressions };
  }

  private entryFor(variant: DirectoryVariant): Entry {
    const { revision, history, tag } = variant.version;
    const versionKey = `${revision}-${history}-${tag}`;
    // The route plans again when its plan is behind what is stored (isBehind): another version is newer.
    if (versionKey !== this.versionKey) {
      this.entries.clear();
      this.versionKey = versionKey;
      this.revision = revision;
      this.history = history;
    }
    const key = `${variant.full ? 'full' : `since ${variant.since}`}${variant.masked ? ' masked' : ''}`;
    const existing = this.entries.get(key);
    if (existing) return existing;
    const release = this.deps.gate.tryEnter();
    if (release === null) throw this.busy();
    this.builds++;
    const held = this.deps.onBuild?.(variant);
    const started = this.deps.clock.monoNow();
    const entry: Entry = { variant, identity: new GrowingBody(), codings: new Map(), lastUsed: started };
    this.entries.set(key, entry);
    const build = () => this.deps.build(variant, entry.identity);
    this.run(entry.identity, held ? () => held.then(build) : build, release).then(
      () => {
        // A full answer once per revision (and door storm) at info; deltas, one per revision a door holds, at debug.
        this.deps.logger[variant.full ? 'info' : 'debug'](
          { revision, full: variant.full, since: variant.since, masked: variant.masked, bytes: entry.identity.length, ms: this.since(started) },
          'directory answer built',
        );
        if (this.entries.get(key) !== entry) return; // the revision moved on meanwhile
        if ((variant.full && variant.masked) || (!variant.full && entry.identity.length > MAX_KEPT_DELTA_BYTES)) this.entries.delete(key);
        else if (!variant.full) this.dropOldDeltas();
      },
      (err: unknown) => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
        this.deps.logger.error({ err, revision, full: variant.full, since: variant.since }, 'cannot build the directory answer');
      },
    );
    return entry;
  }

  private coded(entry: Entry, coding: Coding): GrowingBody {
    const existing = entry.codings.get(coding);
    if (existing) return existing;
    const release = this.deps.gate.tryEnter();
    if (release === null) throw this.busy();
    this.compressions++;
    const started = this.deps.clock.monoNow();
    const sink = new GrowingBody();
    entry.codings.set(coding, sink);
    this.run(sink, () => compressBody(entry.identity, coding, sink), release).then(
      () =>
        this.deps.logger[entry.variant.full ? 'info' : 'debug'](
          { revision: entry.variant.version.revision, full: entry.variant.full, coding, bytes: sink.length, ms: this.since(started) },
          'directory answer compressed',
        ),
      (err: unknown) => {
        if (entry.codings.get(coding) === sink) entry.codings.delete(coding);
        this.deps.logger.error({ err, coding }, 'cannot compress the directory answer');
      },
    );
    return sink;
  }

  /** Runs the work that fills `sink`, failing the sink (so its readers end) if it throws; its gate place is freed either way. */
  private async run(sink: GrowingBody, work: () => Promise<void>, release: () => void): Promise<void> {
    try {
      await work();
    } catch (err) {
      sink.fail(err instanceof Error ? err : new Error(String(err)));
      throw err;
    } finally {
      release();
    }
  }

  private since(started: number): number {
    return Math.round(this.deps.clock.monoNow() - started);
  }

  private dropOldDeltas(): void {
    const deltas = [...this.entries.entries()].filter(([, e]) => !e.variant.full && e.identity.complete);
    if (deltas.length <= MAX_DELTAS) return;
    deltas.sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    for (const [key] of deltas.slice(0, deltas.length - MAX_DELTAS)) this.entries.delete(key);
  }

  private busy(): Overloaded {
    return new Overloaded(
      'directory_builds',
      `the service is already building or compressing ${this.deps.gate.max} directory answers (server.maxDirectoryBuilds; raise it if the machine has CPU and memory to spare)`,
    );
  }
}
