import { mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { callDaemon } from '../control/client.js';
import type { HealthFacts } from '../control/request.js';
import { downloadsDir, fleetDir } from '../fleet/appliedConfig.js';
import { applyUpdate } from '../fleet/update/applyUpdate.js';
import { debianArch, nodeAbi } from '../fleet/update/boardArch.js';
import { childService } from '../fleet/update/childService.js';
import { installedCommand } from '../fleet/update/installedProgram.js';
import type { DaemonHealth } from '../fleet/update/health.js';
import { systemdService } from '../fleet/update/serviceControl.js';
import { readSignedRelease, signatureFileOf } from '../fleet/update/signatureFile.js';
import { appendUpdateStep } from '../fleet/update/updateResult.js';
import { readUpdateRequest, removeUpdateRequest, type UpdateRequestFile } from '../fleet/update/updateRequest.js';
import { BundleRefused } from '../fleet/update/verify.js';
import { systemClock, systemTimers } from '../util/clock.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import { configPath, loadConfigFor, stringOption, type Command } from './context.js';
import { readKeyFile } from './release.js';
import { usageLine } from './usage.js';

/** The bound when neither --health-seconds nor a rollout says (the daemon starts, opens its readers, syncs once). */
const DEFAULT_HEALTH_SECONDS = 120;
/** A health request the daemon has not answered within this counts as no answer. */
const HEALTH_ASK_MS = 5000;

const sleep = (ms: number) => new Promise<void>((done) => systemTimers.setTimeout(done, ms));

function wholeOption(value: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, not ${value}`);
  return Number(value);
}

/** The daemon's health through its control socket (docs/local-control.md, "Health"). */
function askHealth(socket: string): Promise<DaemonHealth> {
  let health: HealthFacts | null = null;
  const call = callDaemon(socket, { action: 'health' }, (line) => {
    if (line.type === 'health') health = line.health;
  });
  const timer = systemTimers.setTimeout(() => call.end(), HEALTH_ASK_MS);
  return call.result.then(
    (last) => {
      systemTimers.clearTimeout(timer);
      if (last.type === 'error') throw new DoorAgentError(`the daemon refused its health request: ${last.error}`);
      if (health === null) throw new DoorAgentError('the daemon answered its health request without its health (an older version?)');
      return health;
    },
    (err: unknown) => {
      systemTimers.clearTimeout(timer);
      throw err;
    },
  );
}

/**
 * `door-agent update apply BUNDLE` (docs/fleet.md, "Signed updates"): checked, installed beside the running version,
 * switched to, and kept only if it reports healthy within the bound; otherwise switched back by itself. Exit 0
 * healthy, 1 refused, rolled back or failed (the reason on stderr); every step in <dataDir>/fleet/update-result.json.
 */
export const command: Command = async (input) => {
  const requestFile = stringOption(input, 'request');
  if (requestFile === undefined) return apply(input, null);
  if (input.positionals.length > 0) throw new UsageError(`--request names the bundle: name no BUNDLE beside it\n${usageLine('update apply')}`);
  const path = resolve(requestFile);
  // Whatever the outcome, the request is removed: door-agent-update.path must not start the update again.
  try {
    let request: UpdateRequestFile;
    try {
      request = readUpdateRequest(path);
    } catch (err) {
      if (!(err instanceof BundleRefused)) throw err;
      return refusedRequest(input, err);
    }
    return await apply(input, request);
  } finally {
    removeUpdateRequest(path);
  }
};

/** A request file that is not one: recorded (the daemon reports what it can) and refused. */
function refusedRequest(input: Parameters<Command>[0], err: BundleRefused): number {
  const config = loadConfigFor(stringOption(input, 'config'), input.ctx);
  appendUpdateStep(config.agent.dataDir, {
    at: new Date(systemClock.wallNow()).toISOString(),
    rollout_id: null,
    version: 'unknown',
    state: 'refused',
    detail: err.message,
  });
  input.ctx.stderr.write(`door-agent: update refused, nothing replaced: ${err.message}\n`);
  return 1;
}

async function apply(input: Parameters<Command>[0], request: UpdateRequestFile | null): Promise<number> {
  const bundle = request?.bundle ?? input.positionals[0];
  if (bundle === undefined) throw new UsageError(`name the bundle: ${usageLine('update apply')}`);
  const flag = stringOption(input, 'config');
  const file = configPath(flag, input.ctx.env);
  const config = loadConfigFor(flag, input.ctx);
  const rootOption = stringOption(input, 'root');
  const root = rootOption === undefined ? '/' : resolve(rootOption);
  const healthSeconds =
    request?.health_bound_seconds ?? wholeOption(stringOption(input, 'health-seconds'), '--health-seconds', 10, 3600) ?? DEFAULT_HEALTH_SECONDS;
  const rolloutId = request?.rollout_id ?? wholeOption(stringOption(input, 'rollout'), '--rollout', 1, Number.MAX_SAFE_INTEGER) ?? null;
  const keyFile = stringOption(input, 'release-key') ?? config.fleet?.releasePublicKeyFile;
  if (keyFile === undefined) {
    throw new UsageError(
      `--release-key is required: ${file} has no fleet.releasePublicKeyFile (the release key pinned at enrolment)\n${usageLine('update apply')}`,
    );
  }
  const socket = config.agent.controlSocket;
  if (socket === null) {
    throw new DoorAgentError(
      `${file} sets agent.controlSocket: null: an update asks the new version's health through the control socket, so it cannot run without one`,
    );
  }
  if (rootOption === undefined && process.getuid?.() !== 0)
    throw new DoorAgentError('update apply replaces the installed program and restarts the daemon: run it as root (sudo)');
  const { dataDir } = config.agent;
  const { stdout, stderr } = input.ctx;
  const record = (detail: string) =>
    appendUpdateStep(dataDir, { at: new Date(systemClock.wallNow()).toISOString(), rollout_id: rolloutId, version: 'unknown', state: 'refused', detail });

  // A request comes from the unprivileged daemon: its bundle must be one the daemon downloaded, not any file root reads.
  const downloads = downloadsDir(dataDir);
  if (request !== null && dirname(resolve(bundle)) !== downloads) {
    const outside = `the request names ${bundle}, not a bundle in ${downloads}`;
    record(outside);
    stderr.write(`door-agent: update refused, nothing replaced: ${outside}\n`);
    return 1;
  }
  let signed;
  try {
    signed = request?.signed ?? readSignedRelease(stringOption(input, 'signature') ?? signatureFileOf(bundle));
  } catch (err) {
    if (!(err instanceof BundleRefused)) throw err;
    record(err.message);
    stderr.write(`door-agent: update refused, nothing replaced: ${err.message}\n`);
    return 1;
  }
  if (process.getuid?.() === 0) {
    // Run as root on what the unprivileged daemon wrote: the key that decides what root installs must be root's.
    const loose = looseKeyFile(keyFile);
    if (loose !== null) {
      record(loose);
      stderr.write(`door-agent: update refused, nothing replaced: ${loose}\n`);
      return 1;
    }
  }
  const releaseKey = readKeyFile(keyFile, 'public');
  mkdirSync(fleetDir(dataDir), { recursive: true, mode: 0o700 });
  const service =
    rootOption === undefined
      ? systemdService()
      : childService({
          wrapper: installedCommand(root),
          config: resolve(stringOption(input, 'run-config') ?? file),
          dataDir,
          log: join(fleetDir(dataDir), 'run.log'),
          sleep,
          warn: (message) => stdout.write(`door-agent update: ${message}\n`),
        });
  const outcome = await applyUpdate(
    {
      bundle,
      signed,
      releaseKey,
      // Never from a request file: the daemon writes it, and what the release key signed says nothing of a
      // downgrade. An older release goes on by hand, as root: update apply --allow-downgrade.
      allowDowngrade: request === null && input.options['allow-downgrade'] === true,
      healthBoundMs: healthSeconds * 1000,
      root,
      dataDir,
      rolloutId,
      board: { arch: debianArch(), nodeAbi: nodeAbi() },
    },
    { service, probe: () => askHealth(socket), clock: systemClock, sleep, say: (line) => stdout.write(`door-agent update: ${line}\n`) },
  );
  if (outcome.state === 'healthy') {
    stdout.write(`door-agent update: ${outcome.detail}\n`);
    return 0;
  }
  const what = outcome.state === 'refused' ? 'refused, nothing replaced' : outcome.state === 'rolled_back' ? 'rolled back' : 'failed';
  stderr.write(`door-agent: update ${what}: ${outcome.detail}\n`);
  return 1;
}

/**
 * Why the pinned release key file cannot be trusted by root, or null: it (and its directory) must be root's and
 * writable by nobody else, or whoever could write it chooses what root installs.
 */
function looseKeyFile(keyFile: string): string | null {
  for (const path of [keyFile, dirname(keyFile)]) {
    const stat = statSync(path);
    if (stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
      return `${path} must belong to root and be writable by root only (it is uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8)}): the release key decides what root installs`;
    }
  }
  return null;
}
