import type { DoorOptions, ReaderOptions } from '../door/options.js';
import { normalizeCredential, type CredentialKind } from '../core/credentials.js';
import { FORMAT_ALIASES, printedNumberer, type WiegandFormatSpec, type WiegandNumbering } from '../core/wiegandFormats.js';
import { readerCardFormat } from '../door/options.js';
import { AccessChecker } from '../door/accessChecker.js';
import { CredentialCache } from '../store/credentialCache.js';
import { CacheDamagedError, quickCheck } from '../store/cacheDamage.js';
import { CacheUnreadableError, cachePath, openDatabase, openStateDatabase, statePath } from '../store/database.js';
import { offlineLimitStatus } from './supervisionStatus.js';
import { systemBootClock } from '../util/bootClock.js';
import { existsSync } from 'node:fs';
import { readOperations } from './operationsStatus.js';
import { parseServiceTime, zonedInstant } from '../core/schedule.js';
import { UsageError } from '../util/errors.js';
import { loadConfigFor, stringOption, type Command, type CommandContext } from './context.js';

export interface CheckArgs {
  credential: string;
  kind: string | undefined;
  door: string | undefined;
  at: string | undefined;
  /** The card's Wiegand format, for a card given as printed at a reader that takes several. */
  format: string | undefined;
  config: string | undefined;
}

const KINDS: readonly CredentialKind[] = ['card', 'pin', 'token'];

const KIND_FORMAT: Record<CredentialKind, string> = {
  card: 'digits only (or hex digits for a door whose reader has cardFormat: hex)',
  pin: '1-16 digits',
  token: '16-128 printable characters without spaces',
};

/** A configured door by uuid, name or resourceId (the one door when there is one and none is named). */
function selectDoor(doors: readonly DoorOptions[], ref: string | undefined): DoorOptions {
  const list = () => doors.map((d) => `  ${d.uuid}  ${d.resourceId}  ${d.name}`).join('\n');
  if (ref === undefined) {
    if (doors.length === 1) return doors[0]!;
    throw new UsageError(`${doors.length} doors are configured: name one with --door UUID, NAME or RESOURCE_ID\n${list()}`);
  }
  const door =
    doors.find((d) => d.uuid === ref.toLowerCase()) ??
    doors.find((d) => d.name === ref) ??
    (/^\d+$/.test(ref) ? doors.find((d) => d.resourceId === Number(ref)) : undefined);
  if (!door) throw new UsageError(`--door ${ref} is not a configured door (uuid, name or resourceId); configured doors:\n${list()}`);
  return door;
}

/** --at: an ISO 8601 instant with its offset, or a local time "YYYY-MM-DD HH:MM" in the agent's time zone. */
function parseAt(at: string | undefined, now: number, timeZone: string): number {
  if (at === undefined) return now;
  const local = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2})$/.exec(at.trim());
  if (local) {
    const [hours, minutes] = [Number(local[2]), Number(local[3])];
    const instant = hours < 24 && minutes < 60 ? zonedInstant(timeZone, local[1]!, hours * 60 + minutes) : null;
    if (instant === null) {
      throw new UsageError(`--at ${JSON.stringify(at)} is not a time that exists in ${timeZone} (a real date, 00:00-23:59, not in a daylight-saving gap)`);
    }
    return instant;
  }
  // Require a date with a time zone or Z, so the instant is unambiguous.
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.exec(at);
  // The date part must exist as written (no 2026-02-30 rolled over into March).
  const real = m !== null && parseServiceTime(`${m[1]}-${m[2]}-${m[3]} ${m[4]}:${m[5]}:00`) !== null;
  if (!real || Number.isNaN(Date.parse(at))) {
    throw new UsageError(
      `--at ${JSON.stringify(at)} is neither a local time such as "2026-12-24 19:00" (agent.timezone) nor an ISO 8601 instant such as 2026-03-29T09:30:00+02:00`,
    );
  }
  return Date.parse(at);
}

/** An instant as the service's UTC time, to the minute (the seconds when there are some). */
function utcMinute(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.slice(17, 19) === '00' ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

/** A credential's validity dates for people: `2026-01-01 00:00 – 2026-12-31 00:00 UTC`, `from ... UTC`, `until ... UTC`. */
function validityText(dates: { validFrom?: number | null; validUntil?: number | null }): string {
  const from = dates.validFrom ?? null;
  const until = dates.validUntil ?? null;
  if (from !== null && until !== null) return `${utcMinute(from)} – ${utcMinute(until)} UTC`;
  return from !== null ? `from ${utcMinute(from)} UTC` : `until ${utcMinute(until!)} UTC`;
}

/**
 * A card typed as printed (`123:45678`) as the door's reader would hand it on: the number it reads as under the
 * reader's numbering (tried first at the door), with the printed form. One entry per distinct number its formats
 * give; none when the reader has no numbering with a number for it (printed numbering, no Wiegand or OSDP
 * reader): the printed form is then looked up as it is.
 */
function printedReads(
  reader: ReaderOptions | undefined,
  printed: string,
  format: WiegandFormatSpec | undefined,
): Array<{ credential: string; printed: string }> {
  const reads = cardReadsOf(reader);
  if (reads === null) return [];
  const [facility, card] = printed.split(':').map(BigInt) as [bigint, bigint];
  return printedNumberer(format ? [format] : reads.formats, reads.numbering)(facility, card).map((credential) => ({ credential, printed }));
}

/** The Wiegand formats a reader takes and its numbering: a Wiegand or OSDP reader's; null for any other reader, or none. */
function cardReadsOf(reader: ReaderOptions | undefined): { formats: readonly WiegandFormatSpec[]; numbering: WiegandNumbering } | null {
  return (reader?.type === 'wiegand' || reader?.type === 'osdp') && reader.formats ? { formats: reader.formats, numbering: reader.numbering } : null;
}

/**
 * --format: the card's format, one of those the door's entry reader takes, by its name (any case when that names one
 * format only) or as the reader's `format:` takes it (26, 34, 37); only for a card given as printed at a Wiegand or
 * OSDP reader, where it is what tells one format's number from another's. The card must read as a number in that
 * format: else the answer would be the printed form's, whatever the format.
 */
function checkFormat(given: string | undefined, door: DoorOptions, kind: CredentialKind, normalized: string): WiegandFormatSpec | undefined {
  if (given === undefined) return undefined;
  if (kind !== 'card' || !normalized.includes(':')) {
    throw new UsageError(`--format applies to a card given as printed (facility:card, e.g. 123:45678); this ${kind} is looked up as it is`);
  }
  const reader = door.reader;
  const formats = cardReadsOf(reader)?.formats;
  if (formats === undefined) {
    const what = reader ? `${door.name}'s reader (${reader.type})` : `${door.name} (no entry reader configured)`;
    throw new UsageError(`--format: ${what} takes no Wiegand formats; a printed card is looked up as printed`);
  }
  const shown = JSON.stringify(given.length > 40 ? `${given.slice(0, 40)}…` : given);
  const alias = FORMAT_ALIASES[Number(given) as keyof typeof FORMAT_ALIASES];
  const exact = formats.find((f) => f.name === given || f.name === alias);
  const anyCase = formats.filter((f) => f.name.toLowerCase() === given.toLowerCase());
  const format = exact ?? (anyCase.length === 1 ? anyCase[0] : undefined);
  if (!format) {
    const why =
      anyCase.length > 1
        ? `names ${anyCase.length} formats (give it as written: ${anyCase.map((f) => f.name).join(', ')})`
        : 'is not a format the reader takes';
    throw new UsageError(`--format ${shown} ${why}; ${door.name}'s reader takes ${formatNames(door)}`);
  }
  if (printedReads(reader, normalized, format).length === 0) {
    throw new UsageError(
      `--format ${format.name}: the card given as printed reads as no number in ${format.name} on ${door.name}'s reader ` +
        `(its facility or card does not fit the format's fields, the format has an issue level or no facility, or the reader's numbering is printed)`,
    );
  }
  return format;
}

/** The formats a door's Wiegand or OSDP reader takes, by name. */
function formatNames(door: DoorOptions): string {
  return (cardReadsOf(door.reader)?.formats ?? []).map((f) => f.name).join(', ');
}

/** `door-agent check`: the offline decision from the cache, as JSON. Exit 0 granted, 1 denied. */
function runCheck(args: CheckArgs, ctx: CommandContext): number {
  const kind = (args.kind ?? 'card') as CredentialKind;
  if (!KINDS.includes(kind)) throw new UsageError(`--kind must be card, pin or token (got ${JSON.stringify(args.kind)})`);
  const config = loadConfigFor(args.config, ctx);
  const at = parseAt(args.at, ctx.clock.wallNow(), config.agent.timezone);
  const door = selectDoor(config.doors, args.door);
  const normalized = normalizeCredential(args.credential, kind, readerCardFormat(door));
  if (normalized === null) {
    // Never echo the credential: it may be a PIN or a card number.
    throw new UsageError(`the ${kind} given is malformed: expected ${KIND_FORMAT[kind]} (${args.credential.length} characters given)`);
  }
  const format = checkFormat(args.format, door, kind, normalized);
  const db = openDatabase(cachePath(config.agent.dataDir), { readonly: true });
  // Every page, as the daemon checks it at start: a damaged cache refuses every credential there (cache_damaged).
  const damaged = quickCheck(cachePath(config.agent.dataDir));
  if (damaged !== null) {
    db.close();
    throw new CacheUnreadableError(new CacheDamagedError(damaged));
  }
  // The daemon's lockdowns and the holidays published to it decide too (state.db, when a daemon has run).
  const stateFile = statePath(config.agent.dataDir);
  const state = existsSync(stateFile) ? openStateDatabase(stateFile, { readonly: true }) : null;
  try {
    const operations = readOperations(config, state);
    const checker = new AccessChecker(new CredentialCache(db), config);
    checker.setPublishedHolidays([...operations.holidays]);
    const lockdown = operations.lockdown(door.uuid).active;
    // The offline limit as it stands now (the cache's age now, whatever --at says), as the daemon measures it.
    const cacheTooOld = offlineLimitStatus(config, db, state, ctx.clock.wallNow(), systemBootClock).inForce;
    const request = { door, kind, now: at, lockdown, cacheTooOld };
    const reads = kind === 'card' && normalized.includes(':') ? printedReads(door.reader, normalized, format) : [];
    const results =
      reads.length > 0
        ? reads.map((read) => checker.checkPresented({ ...request, ...read }))
        : [checker.checkPresented({ ...request, credential: normalized })];
    const result = results[0]!;
    // A printed card its reader's formats read as different numbers (auto: H10301 and C1k35, ...) with different outcomes.
    const outcome = (r: typeof result) => JSON.stringify([r.granted, r.reason, r.matchedBy, r.holders.map((h) => [h.holder, h.reason])]);
    if (results.some((r) => outcome(r) !== outcome(result))) {
      throw new UsageError(
        `the card given as printed reads as ${results.length} different numbers on ${door.name}'s reader (its formats differ), decided differently: ` +
          `give the card's format with --format (${formatNames(door)}), or the number it reads as (door-agent reader learn shows both)`,
      );
    }
    const matchedBy = result.holders.length === 0 ? null : (result.matchedBy ?? 'number');
    const explained = checker.explain({ door, kind, credential: matchedBy === 'printed' || reads.length === 0 ? normalized : reads[0]!.credential, now: at });
    const output = {
      granted: result.granted,
      reason: result.reason,
      ...(result.level !== undefined ? { level: result.level } : {}),
      ...(result.who !== undefined ? { who: result.who } : {}),
      holders: result.holders.map((h, i) => {
        const ref = h.holder;
        const levels = 'email_id' in ref ? explained.find((e) => 'email_id' in e.holder && e.holder.email_id === ref.email_id)?.levels : undefined;
        const dates = result.validity?.[i] ?? null;
        return { ...ref, granted: h.reason === null, reason: h.reason, ...(dates ? { valid: validityText(dates) } : {}), ...(levels ? { levels } : {}) };
      }),
      door: result.door,
      door_name: door.name,
      kind: result.kind,
      hint: result.hint,
      // Which form of the card the directory holds: its number in the reader's numbering, or as printed (facility:card).
      ...(kind === 'card' ? { matched: matchedBy } : {}),
      ...(format !== undefined ? { format: format.name } : {}),
      at: new Date(at).toISOString(),
      timezone: config.agent.timezone,
      ...(lockdown ? { lockdown: true } : {}),
      ...(cacheTooOld ? { cache_too_old: true } : {}),
      ...(result.duress ? { duress: true } : {}),
    };
    ctx.stdout.write(`${JSON.stringify(output)}\n`);
    return result.granted ? 0 : 1;
  } finally {
    state?.close();
    db.close();
  }
}

export const command: Command = (input) =>
  runCheck(
    {
      credential: input.positionals[0]!,
      kind: stringOption(input, 'kind'),
      door: stringOption(input, 'door'),
      at: stringOption(input, 'at'),
      format: stringOption(input, 'format'),
      config: stringOption(input, 'config'),
    },
    input.ctx,
  );
