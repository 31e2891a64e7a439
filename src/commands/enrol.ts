import { createHash, type KeyObject, randomBytes } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEnrolCode } from '../api/fleet.js';
import { parseConfig } from '../config/load.js';
import { DEFAULT_DATA_DIR } from '../config/schema.js';
import { boardFacts } from '../fleet/boardFacts.js';
import { BoardFiles } from '../fleet/boardFiles.js';
import { checkChallenge, checkEnrolAnswer, checkGrant, EnrolClient, EnrolError } from '../fleet/enrolClient.js';
import { grantPaths, writeGrantFiles } from '../fleet/grantFiles.js';
import { isUntouchedExample, setExampleAside } from '../fleet/installerExample.js';
import { pendingEnrolmentFile, readPendingEnrolment, removePendingEnrolment, writePendingEnrolment, type PendingEnrolment } from '../fleet/pendingEnrolment.js';
import { fingerprint, publicKeyFromRaw } from '../protocol/fleetSigning.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';

const DEFAULT_WAIT_MINUTES = 30;
/** The poll's period: 3 to 5 s (jittered, so boards enrolled together do not ask together). */
const pollDelayMs = () => 3000 + Math.random() * 2000;
/** The confirmation is asked this many times before the command gives up on it (the grant is written by then). */
const CONFIRM_TRIES = 5;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

interface Target {
  url: string;
  code: { secret: string; fingerprint: string };
}

/** URL and CODE as typed: usage errors (exit 2) naming what is wrong, before anything is read or sent. */
function target(positionals: readonly string[]): Target | null {
  if (positionals.length === 0) return null;
  if (positionals.length !== 2)
    throw new UsageError("give the service's URL and the code, as door-agent service enrol-code prints them: door-agent enrol URL CODE");
  const [url, code] = positionals as [string, string];
  let parsedUrl: URL | null = null;
  try {
    parsedUrl = new URL(url);
  } catch {
    parsedUrl = null;
  }
  if (!parsedUrl || (parsedUrl.protocol !== 'http:' && parsedUrl.protocol !== 'https:') || parsedUrl.username !== '' || parsedUrl.password !== '') {
    throw new UsageError(`URL ${JSON.stringify(url)} is not the service's http:// or https:// address (e.g. https://access.example.org)`);
  }
  const parsedCode = parseEnrolCode(code);
  if (!parsedCode) {
    throw new UsageError(
      `CODE ${JSON.stringify(code.slice(0, 80))} is not an enrolment code: da1.<32 letters and digits>.<26 letters and digits>, as door-agent service enrol-code prints it`,
    );
  }
  return { url: url.replace(/\/+$/, ''), code: parsedCode };
}

/**
 * Nothing on the board may be replaced: a configuration there already (or a file the grant would write) stops it.
 * The installer's example, untouched, is nobody's configuration: it is set aside once the board is adopted
 * (true returned).
 */
function refuseExisting(configFile: string): boolean {
  const example = isUntouchedExample(configFile);
  if (!example && existsSync(configFile)) {
    throw new DoorAgentError(
      `${configFile} exists: this board is configured already, and door-agent enrol never overwrites a configuration (nothing was sent). ` +
        "To enrol it, move that file away first (the installer's example, unedited, is set aside by itself).",
    );
  }
  const paths = grantPaths(configFile);
  for (const file of [paths.apiKey, paths.mqttPassword, paths.servicePub, paths.releasePub]) {
    if (existsSync(file)) throw new DoorAgentError(`${file} exists: door-agent enrol writes it and never overwrites a file; move it away (nothing was sent)`);
  }
  return example;
}

/** Whether `url` is plain http to another machine (not this one's loopback). */
function inClear(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && !(hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname));
}

/**
 * The challenge, before the code's secret goes anywhere: whoever answers at the URL proves it holds the key of the
 * code's fingerprint, and that the URL is the address it was set up with (server.publicUrl). A service without the
 * route is refused, never sent the secret.
 */
async function proveService(client: EnrolClient, to: Target): Promise<void> {
  const nonce = randomBytes(32).toString('base64url');
  let answer;
  try {
    answer = await client.challenge(nonce);
  } catch (err) {
    const status = err instanceof EnrolError ? err.status : null;
    if (status === 401 || status === 404 || status === 405) {
      throw new DoorAgentError(
        `${to.url} does not answer the enrolment's challenge (POST /fleet/enrol/challenge: ${(err as Error).message}): ` +
          "a door-agent service older than this board must be updated before it enrols boards, or this is not the service's address; the code's secret was not sent, nothing was written",
        { cause: err },
      );
    }
    const what = status !== null && status !== 200 ? `${to.url} refused the challenge: ${(err as Error).message}` : (err as Error).message;
    throw new DoorAgentError(`${what}; the code's secret was not sent, nothing was written`, { cause: err });
  }
  checkChallenge(answer, nonce, to.code, to.url);
}

/** The challenge, then POST /fleet/enrol with the code, its answer checked, the pending record written: the enrolment to wait on. */
async function enrolWithCode(to: Target, dataDir: string, files: BoardFiles): Promise<PendingEnrolment> {
  const client = new EnrolClient(to.url);
  await proveService(client, to);
  let answer;
  try {
    answer = await client.enrol(to.code.secret, boardFacts());
  } catch (err) {
    const refused = err instanceof EnrolError && err.status !== null && err.status !== 200;
    throw new DoorAgentError(`${refused ? `${to.url} refused the code: ` : ''}${(err as Error).message}; nothing was written`, { cause: err });
  }
  checkEnrolAnswer(answer, to.code, to.url);
  try {
    return writePendingEnrolment(files, dataDir, {
      url: to.url,
      enrolment_id: answer.accepted.enrolment_id,
      poll_secret: answer.accepted.poll_secret,
      fingerprint: to.code.fingerprint,
      service_key: answer.service_key,
      secret_sha256: sha256(to.code.secret),
    });
  } catch (err) {
    files.takeBack();
    throw new DoorAgentError(`cannot write ${pendingEnrolmentFile(dataDir)}: ${(err as Error).message}`, { cause: err });
  }
}

/** The record's key, checked again against the fingerprint the code named (a record edited on the board is refused). */
function serviceKeyOf(record: PendingEnrolment, file: string): KeyObject {
  const key = publicKeyFromRaw(record.service_key);
  if (key === null || fingerprint(key) !== record.fingerprint) {
    throw new DoorAgentError(`${file}: its service key is not the one of the code's fingerprint ${record.fingerprint}: remove it, and enrol with a new code`);
  }
  return key;
}

async function runEnrol(
  args: { positionals: readonly string[]; config: string | undefined; dataDir: string | undefined; waitMinutes: string | undefined },
  ctx: CommandContext,
): Promise<number> {
  const to = target(args.positionals);
  let waitMinutes = DEFAULT_WAIT_MINUTES;
  if (args.waitMinutes !== undefined) {
    waitMinutes = /^\d{1,5}$/.test(args.waitMinutes) ? Number(args.waitMinutes) : 0;
    if (waitMinutes < 1) throw new UsageError('--wait-minutes must be a whole number of minutes, at least 1');
  }
  const configFile = resolve(configPath(args.config, ctx.env));
  const dataDir = resolve(args.dataDir ?? DEFAULT_DATA_DIR);
  const exampleThere = refuseExisting(configFile);

  const files = new BoardFiles(BoardFiles.ownerOf(dataDir));
  let record = readPendingEnrolment(dataDir);
  if (record && to && (record.url !== to.url || record.fingerprint !== to.code.fingerprint || record.secret_sha256 !== sha256(to.code.secret))) {
    throw new DoorAgentError(
      `${pendingEnrolmentFile(dataDir)} holds a pending enrolment (${record.enrolment_id} at ${record.url}) made with another code: ` +
        'run door-agent enrol without URL CODE to resume it, or remove that file to start again with this code',
    );
  }
  if (!record && !to) {
    throw new UsageError(`no pending enrolment in ${pendingEnrolmentFile(dataDir)}: give the service's URL and the code (door-agent enrol URL CODE)`);
  }
  const url = to?.url ?? record!.url;
  if (inClear(url)) {
    ctx.stderr.write(
      `door-agent enrol: WARNING: ${url} is plain http to another machine: the code's secret, and once adopted the board's DOOR key and MQTT password, cross the network in clear (use https://)\n`,
    );
  }
  record ??= await enrolWithCode(to!, dataDir, files);
  const serviceKey = serviceKeyOf(record, pendingEnrolmentFile(dataDir));

  const client = new EnrolClient(record.url);
  const deadline = ctx.clock.monoNow() + waitMinutes * 60_000;
  let waiting = false;
  let lastProblem = '';
  let grantState;
  for (;;) {
    let state;
    try {
      state = await client.poll(record.enrolment_id, record.poll_secret);
    } catch (err) {
      if (!(err instanceof EnrolError) || !err.transient) {
        const what = err instanceof EnrolError && err.status === 410 ? '' : ' (remove it, and enrol with a new code)';
        throw new DoorAgentError(`${record.url} no longer takes the pending enrolment of ${pendingEnrolmentFile(dataDir)}${what}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      if (err.message !== lastProblem) ctx.stderr.write(`door-agent enrol: ${err.message} (asking again)\n`);
      lastProblem = err.message;
      state = null;
    }
    if (state?.state === 'refused') {
      removePendingEnrolment(dataDir, record, true);
      throw new DoorAgentError(`an operator refused this board (enrolment ${record.enrolment_id}): ${state.reason || 'no reason given'}; nothing was written`);
    }
    if (state?.state === 'adopted') {
      grantState = state;
      break;
    }
    if (state?.state === 'pending' && !waiting) {
      ctx.stdout.write(`waiting for an operator to adopt ${hostname()} in the console (enrolment ${record.enrolment_id})\n`);
      waiting = true;
    }
    if (ctx.clock.monoNow() >= deadline) {
      throw new DoorAgentError(
        `no operator adopted this board within ${waitMinutes} minute(s): run door-agent enrol again (without URL CODE) to keep waiting; enrolment ${record.enrolment_id} stays pending`,
      );
    }
    await sleep(pollDelayMs());
  }

  const grant = checkGrant(grantState, serviceKey, record.enrolment_id);
  const written = new BoardFiles(BoardFiles.ownerOf(dataDir));
  // Checked again: someone may have edited the example while the board waited.
  const aside = exampleThere && isUntouchedExample(configFile) ? setExampleAside(configFile) : null;
  try {
    writeGrantFiles(written, grant, serviceKey, { configFile, dataDir, at: new Date(ctx.clock.wallNow()) }, (text) => {
      parseConfig(text, configFile);
    });
  } catch (err) {
    if (aside !== null) renameSync(aside, configFile);
    throw err;
  }
  if (aside !== null) ctx.stdout.write(`the installer's example configuration, unedited, is kept as ${aside}\n`);
  await confirm(client, record.enrolment_id, grant.api_key, ctx);
  removePendingEnrolment(dataDir, record, false);
  ctx.stdout.write(
    `enrolled as agent ${grant.agent_id} of ${grant.service_url}: wrote ${configFile}, with its secrets in ${grantPaths(configFile).secrets}\n` +
      `next: systemctl enable --now door-agent\n`,
  );
  return 0;
}

/** Tells the service the files are written (its poll secret dies); the board is enrolled whatever it answers. */
async function confirm(client: EnrolClient, enrolmentId: string, apiKey: string, ctx: CommandContext): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.confirm(enrolmentId, apiKey);
      return;
    } catch (err) {
      const transient = err instanceof EnrolError && err.transient;
      if (!transient || attempt >= CONFIRM_TRIES) {
        ctx.stderr.write(
          `door-agent enrol: WARNING: the service did not take the confirmation (${(err as Error).message}); the board is enrolled all the same, and its poll secret stays good at the service until confirmed\n`,
        );
        return;
      }
      await sleep(pollDelayMs());
    }
  }
}

export const command: Command = (input) =>
  runEnrol(
    {
      positionals: input.positionals,
      config: stringOption(input, 'config'),
      dataDir: stringOption(input, 'data-dir'),
      waitMinutes: stringOption(input, 'wait-minutes'),
    },
    input.ctx,
  );
