import type { KeyObject } from 'node:crypto';
import type { SignedRelease } from '../../api/fleet.js';
import type { Clock } from '../../util/clock.js';
import { waitHealthy, type HealthProbe, type LinksBefore } from './health.js';
import { copyIncoming, type IncomingBundle } from './incoming.js';
import { installedProgram } from './installedProgram.js';
import { type ProgramSwitch, SwitchStranded } from './programSwitch.js';
import type { ServiceControl } from './serviceControl.js';
import { appendUpdateStep, type UpdateState } from './updateResult.js';
import { BundleRefused, verifyBundle } from './verify.js';

export interface UpdateRequest {
  /** The bundle (`door-agent-<version>-<arch>.tar.gz`) and its signature file's content. */
  bundle: string;
  signed: SignedRelease;
  /** The release key pinned on this board. */
  releaseKey: KeyObject;
  allowDowngrade: boolean;
  /** How long the new version has to report healthy. */
  healthBoundMs: number;
  /** `/`, or a test root (scripts/install.sh --root; a Debian package only in the root the update runs in). */
  root: string;
  /** agent.dataDir: update-result.json goes to its fleet/. */
  dataDir: string;
  /** The rollout that offered it (recorded for the daemon's report); null for an update by hand. */
  rolloutId: number | null;
  board: { arch: string; nodeAbi: string };
}

export interface UpdateDeps {
  service: ServiceControl;
  probe: HealthProbe;
  clock: Clock;
  sleep: (ms: number) => Promise<void>;
  /** One line of progress for the operator. */
  say: (line: string) => void;
  /** Tests only: called once root's copy of the bundle is made, before it is checked (a test replaces the file it was copied from). */
  afterBundleCopy?: () => void | Promise<void>;
  /** The layout found in `root` (programSwitch.ts), unless given. */
  program?: (root: string) => Promise<ProgramSwitch>;
}

export interface UpdateOutcome {
  state: Exclude<UpdateState, 'downloading' | 'installing'>;
  detail: string;
}

/**
 * `door-agent update apply` (docs/fleet.md, "Signed updates"): the bundle copied where only root writes
 * (update/incoming.ts), and that copy checked (update/verify.ts) and made ready beside the program (the layout's
 * ProgramSwitch: unpacked for the installer's, its package taken and the installed one rebuilt for the Debian
 * package's) before anything is replaced; then the daemon stopped (every relay locked as it stops), the switch made,
 * the daemon started; the new version must report healthy within the bound, or the board switches back by itself
 * and starts the old version. Each step is appended to update-result.json.
 */
export async function applyUpdate(request: UpdateRequest, deps: UpdateDeps): Promise<UpdateOutcome> {
  const version = request.signed.manifest.version;
  const record = (state: UpdateState, detail: string) =>
    appendUpdateStep(request.dataDir, { at: new Date(deps.clock.wallNow()).toISOString(), rollout_id: request.rolloutId, version, state, detail });
  const end = (state: UpdateOutcome['state'], detail: string): UpdateOutcome => {
    record(state, detail);
    return { state, detail };
  };

  let program: ProgramSwitch;
  try {
    program = await (deps.program ?? installedProgram)(request.root);
  } catch (err) {
    return end('refused', err instanceof Error ? err.message : String(err));
  }
  const installed = program.installed;
  let incoming: IncomingBundle | null = null;
  try {
    incoming = copyIncoming(request.bundle, request.signed.manifest.size, program.incomingPrefix);
    await deps.afterBundleCopy?.();
    const board = Object.assign({ installedVersion: installed }, request.board);
    await verifyBundle(Object.assign({}, request, { bundle: incoming.bundle, board }));
    deps.say(`${request.bundle}: version ${version} for ${request.signed.manifest.arch}, signed by the release key: verified`);
    deps.say(await program.prepare(incoming.bundle, request.signed));
  } catch (err) {
    program.discard();
    // The messages name the file the operator (or the request) gave, not root's copy of it.
    const message = (err instanceof Error ? err.message : String(err)).split(incoming?.bundle ?? request.bundle).join(request.bundle);
    if (err instanceof BundleRefused) return end('refused', message);
    return end('failed', `could not prepare the update, nothing was replaced: ${message}`);
  } finally {
    incoming?.remove();
  }

  const wasActive = await deps.service.isActive();
  const before = wasActive ? await linksBefore(deps) : { service: false, broker: false };
  record('installing', `from ${installed} to ${version} (the way back by hand: ${program.byHand()})`);
  try {
    await deps.service.stop();
    deps.say('door-agent stopped: every relay locked');
    deps.say(await program.forward());
  } catch (err) {
    // The program is where it was (forward undoes itself): the old version started again. Half replaced
    // (SwitchStranded), nothing is started: the relays stay locked until the operator puts it back.
    const why = `the switch to ${version} failed: ${err instanceof Error ? err.message : String(err)}`;
    program.discard();
    if (err instanceof SwitchStranded) return end('failed', `${why}; the daemon is left stopped, its relays locked`);
    if (wasActive) await deps.service.start().catch(() => undefined);
    return end('failed', why);
  }

  const trial = await startAndWait(deps, version, before, request.healthBoundMs);
  if (trial.healthy) {
    const kept = program.keep();
    return end('healthy', `${version} healthy ${trial.seconds} s after its start (was ${installed}; ${kept})`);
  }

  deps.say(`${version} is not healthy (${trial.why}): switching back to ${installed}`);
  const back = await rollBack(deps, program, before, wasActive, request.healthBoundMs);
  if (back !== null) return end('failed', `${version} was not healthy (${trial.why}); ${back}`);
  return end('rolled_back', `${version} was not healthy (${trial.why}); rolled back to ${installed}`);
}

/** What the running daemon had reached (the new version must reach it too); nothing when it does not answer. */
async function linksBefore(deps: UpdateDeps): Promise<LinksBefore> {
  try {
    const health = await deps.probe();
    const before = { service: health.service?.reached ?? false, broker: health.broker?.reached ?? false };
    deps.say(`running ${health.version}: service ${before.service ? 'reached' : 'not reached'}, broker ${before.broker ? 'reached' : 'not reached'}`);
    return before;
  } catch (err) {
    deps.say(`the running daemon did not answer its health (${err instanceof Error ? err.message : String(err)}): the service and the broker are not required`);
    return { service: false, broker: false };
  }
}

async function startAndWait(deps: UpdateDeps, version: string, before: LinksBefore, boundMs: number) {
  try {
    await deps.service.start();
  } catch (err) {
    return { healthy: false as const, why: `it could not be started: ${err instanceof Error ? err.message : String(err)}` };
  }
  return waitHealthy(deps, version, before, boundMs);
}

/** Stopped (relays locked), switched back, the old version started again when it ran before; null when it is healthy again. */
async function rollBack(deps: UpdateDeps, program: ProgramSwitch, before: LinksBefore, wasActive: boolean, boundMs: number): Promise<string | null> {
  const installed = program.installed;
  try {
    await deps.service.stop();
    deps.say(await program.back());
  } catch (err) {
    return `switching back to ${installed} failed: ${err instanceof Error ? err.message : String(err)} (the daemon is stopped, its relays locked: ${program.byHand()})`;
  }
  if (!wasActive) return null;
  const again = await startAndWait(deps, installed, before, boundMs);
  return again.healthy ? null : `switched back to ${installed}, which did not report healthy either (${again.why})`;
}
