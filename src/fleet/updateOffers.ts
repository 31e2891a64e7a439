import type { KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import * as z from 'zod';
import type { FleetReport, UpdateOffer } from '../api/fleet.js';
import { writeWhole } from '../util/wholeFile.js';
import { downloadsDir, fleetDir } from './appliedConfig.js';
import { DownloadRefused, downloadFile, type ExpectedFile } from './downloads.js';
import type { FleetExchange } from './fleetClient.js';
import type { ExchangeHandler } from './fleetComponent.js';
import type { ReportPart } from './fleetReporter.js';
import { pendingUpdateRequest, writeUpdateRequest } from './update/updateRequest.js';
import { appendUpdateStep, readUpdateSteps, type UpdateState, type UpdateStep } from './update/updateResult.js';
import { BundleRefused, checkForBoard, checkReleaseSignature } from './update/verify.js';

type UpdateReport = NonNullable<FleetReport['update']>;

/** The states an update ends in (update-result.json's last step of a rollout): each reported once. */
const ENDED = new Set<UpdateState>(['healthy', 'rolled_back', 'refused', 'failed']);
/** How many reported rollouts the record keeps. */
const MAX_RECORDED = 50;

const reportedPath = (dataDir: string) => join(fleetDir(dataDir), 'update-reported.json');

function readReported(dataDir: string): number[] {
  try {
    const parsed = z.array(z.number().int().positive()).safeParse(JSON.parse(readFileSync(reportedPath(dataDir), 'utf8')));
    return parsed.success ? parsed.data : [];
  } catch {
    return []; // none yet (or not one: started again)
  }
}

/**
 * An update offered by a rollout (docs/fleet.md, "On the board: an offered update"). The daemon (user door-agent)
 * never replaces the program itself: it checks the offer (the release key's signature, this board's architecture,
 * the version rules of update/verify.ts) and refuses one that fails, with nothing downloaded; it downloads the
 * bundle to `<dataDir>/fleet/downloads/` (size and SHA-256 as signed) and writes update-request.json, which starts
 * the root unit door-agent-update.service. What that unit's `update apply` records in update-result.json (healthy,
 * rolled back, refused, failed) is reported once, by whichever version runs then. A rollout taken, or reported, is
 * not taken again.
 */
export class UpdateOffers implements ExchangeHandler {
  readonly name = 'update';
  private reported: number[];
  /** A final state handed to the reporter: recorded as reported once a report after it went through. */
  private sent: number | null = null;

  constructor(
    private readonly deps: {
      dataDir: string;
      /** GET a path of the service with the agent's key (FleetClient.open). */
      open: (path: string) => Promise<AsyncIterable<Buffer> & { destroy(): void }>;
      reporter: { set(part: ReportPart): void; flush(): Promise<void> };
      /** The release key pinned at enrolment (fleet.releasePublicKeyFile); null: none was given. */
      releaseKey: () => KeyObject | null;
      /** This board: its Debian architecture and the program's version. */
      board: () => { arch: string; installedVersion: string };
      wallNow: () => number;
      logger: Logger;
    },
  ) {
    this.reported = readReported(deps.dataDir);
    // At start: an update that ended while the daemon was stopped (switched to, or back) is reported at once.
    this.reportEnded();
  }

  async handle(exchange: FleetExchange): Promise<void> {
    // This exchange came after a report went through: the final state handed to it was delivered.
    if (this.sent !== null) this.record(this.sent);
    this.sent = null;
    if (this.reportEnded()) return;
    const offer = exchange.update;
    if (offer === null || this.taken(offer.rollout_id)) return;
    await this.take(offer);
    this.reportEnded();
  }

  /** Whether rollout `id` was taken already: reported, recorded by the updater, or its request waiting. */
  private taken(id: number): boolean {
    if (this.reported.includes(id)) return true;
    if (readUpdateSteps(this.deps.dataDir).some((s) => s.rollout_id === id)) return true;
    return pendingUpdateRequest(this.deps.dataDir)?.rollout_id === id;
  }

  /** The latest ended update not reported yet, handed to the reporter (true); false when there is none. */
  private reportEnded(): boolean {
    const last = new Map<number, UpdateStep>();
    for (const step of readUpdateSteps(this.deps.dataDir)) if (step.rollout_id !== null) last.set(step.rollout_id, step);
    const ended = [...last.values()].filter((s) => ENDED.has(s.state) && !this.reported.includes(s.rollout_id!));
    const latest = ended.pop();
    if (latest === undefined) return false;
    // Older ones (an earlier update never reported): the service has moved on; not sent.
    for (const older of ended) this.record(older.rollout_id!);
    this.report({ rollout_id: latest.rollout_id!, state: latest.state, detail: latest.detail });
    this.sent = latest.rollout_id!;
    if (pendingUpdateRequest(this.deps.dataDir) === null) rmSync(downloadsDir(this.deps.dataDir), { recursive: true, force: true });
    this.deps.logger.info({ rollout: latest.rollout_id, version: latest.version, state: latest.state }, `update to ${latest.version}: ${latest.state}`);
    return true;
  }

  private async take(offer: UpdateOffer): Promise<void> {
    const { dataDir, logger } = this.deps;
    const { manifest } = offer;
    const name = `door-agent-${manifest.version}-${manifest.arch}.tar.gz`;
    const signed = { manifest, signature: offer.signature };
    const refuse = (reason: string) => {
      const at = new Date(this.deps.wallNow()).toISOString();
      appendUpdateStep(dataDir, { at, rollout_id: offer.rollout_id, version: manifest.version, state: 'refused', detail: reason });
      logger.warn({ rollout: offer.rollout_id, version: manifest.version, reason }, `the update to ${manifest.version} offered is refused`);
    };
    try {
      let key: KeyObject | null;
      try {
        key = this.deps.releaseKey();
      } catch (err) {
        throw new BundleRefused(`cannot read the release key (fleet.releasePublicKeyFile): ${(err as Error).message}`, err);
      }
      if (key === null) throw new BundleRefused('this board has no release key (fleet.releasePublicKeyFile, pinned at enrolment): it takes no update');
      checkReleaseSignature(name, signed, key);
      // Never a downgrade from the service, whatever the offer says: the root unit would refuse it anyway.
      checkForBoard(name, signed, this.deps.board(), false);
    } catch (err) {
      if (!(err instanceof BundleRefused)) throw err;
      refuse(`${err.message}; nothing was downloaded`);
      return;
    }
    this.report({ rollout_id: offer.rollout_id, state: 'downloading', detail: `fetching ${name} (${manifest.size} bytes)` });
    await this.deps.reporter.flush().catch((err: unknown) => logger.warn({ err: { message: (err as Error).message } }, 'fleet: cannot report the download'));
    const dir = downloadsDir(dataDir);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const bundle = join(dir, name);
    const expected: ExpectedFile = { what: `the bundle ${name}`, size: manifest.size, sha256: manifest.sha256 };
    try {
      await downloadFile(await this.deps.open(offer.bundle_path), expected, bundle);
    } catch (err) {
      if (err instanceof DownloadRefused) {
        refuse(err.message);
        return;
      }
      // The link, the service: tried again at the next exchange (the offer stands until it is reported).
      logger.warn({ err: { message: (err as Error).message }, rollout: offer.rollout_id }, `cannot download ${name}: tried again at the next exchange`);
      return;
    }
    writeUpdateRequest(dataDir, {
      rollout_id: offer.rollout_id,
      bundle,
      signed,
      allow_downgrade: false,
      health_bound_seconds: offer.health_bound_seconds,
    });
    this.report({ rollout_id: offer.rollout_id, state: 'installing', detail: `${name} downloaded and checked: door-agent-update.service installs it` });
    logger.info({ rollout: offer.rollout_id, version: manifest.version }, `update to ${manifest.version} downloaded: handed to door-agent-update.service`);
  }

  private report(update: UpdateReport): void {
    this.deps.reporter.set({ update });
  }

  private record(rolloutId: number): void {
    if (this.reported.includes(rolloutId)) return;
    this.reported = [...this.reported, rolloutId].slice(-MAX_RECORDED);
    mkdirSync(fleetDir(this.deps.dataDir), { recursive: true, mode: 0o700 });
    writeWhole(reportedPath(this.deps.dataDir), `${JSON.stringify(this.reported)}\n`);
  }
}
