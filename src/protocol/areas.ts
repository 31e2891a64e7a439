import * as z from 'zod';
import { holderRefOf, type Occupant } from '../core/areas.js';
import { problemsInOneLine } from '../util/issues.js';
import { openSignedObject } from './retainedMessages.js';

/**
 * Areas on MQTT (issue 26, docs/areas.md and docs/mqtt.md, "Areas"):
 * - `P/agents/<id>/areas/<area>/occupancy`, retained, out: the muster list, `{area, name, count, max, occupants,
 *   at}`; each occupant by holder (`user:<email_id>` or `link:<magic_link_id>`), their id, name, since when and
 *   through which door; never a card number.
 * - `P/agents/<id>/areas/reset`, in, not retained: `{"area":"lab","by":"..."}` resets one area, `{"area":null}` (or
 *   no `area`) every area of the agent. When commands are signed (mqtt.commandSecretFile) it carries `request_id`,
 *   `issued_at` and `signature` over "areas reset agent:<id>\n" and the canonical JSON of the rest, as the
 *   lockdown does; the reply goes to its MQTT 5 response topic, else `P/agents/<id>/areas/reply`.
 */

/** One person in the muster list. */
export interface MusterEntry {
  holder: string;
  email_id?: number;
  magic_link_id?: string;
  /** The user's name as the directory gives it (what access_granted's `who` says); null: not known, or a guest link. */
  name: string | null;
  /** When they entered (ISO). */
  since: string;
  /** The door they entered through (uuid) and its name. */
  door: string;
  door_name: string;
}

/** The muster list of an area: its occupants, earliest first, named. */
export function musterList(occupants: readonly Occupant[], names: { user: (emailId: number) => string | null; door: (uuid: string) => string }): MusterEntry[] {
  return occupants.map((o) => {
    const ref = holderRefOf(o.holder);
    return {
      holder: o.holder,
      ...ref,
      name: 'email_id' in ref ? names.user(ref.email_id) : null,
      since: new Date(o.since).toISOString(),
      door: o.door,
      door_name: names.door(o.door),
    };
  });
}

/** The retained occupancy message of an area. */
export function occupancyPayload(area: { id: string; name: string; maxOccupancy: number | null }, occupants: readonly MusterEntry[], at: number): string {
  return JSON.stringify({ area: area.id, name: area.name, count: occupants.length, max: area.maxOccupancy, occupants, at: new Date(at).toISOString() });
}

const resetSchema = z.object({
  /** null or absent: every area of the agent. */
  area: z.string().min(1).max(64).nullable().optional(),
  by: z.string().trim().min(1).max(128).optional(),
  request_id: z.string().min(1).max(128).optional(),
});

export interface AreaReset {
  area: string | null;
  by: string | null;
  requestId: string | null;
  /** issued_at of a signed reset (unix seconds). */
  issuedAt: number | null;
}

const MAX_RESET_BYTES = 4096;

/** Why a reset was refused, with the reply's status as a door command's: 400 invalid, 401 signature missing or wrong. */
export interface AreaResetRefusal {
  refused: string;
  status: 400 | 401;
  /** The message's request_id, for the reply (not authenticated when the signature is what failed). */
  requestId: string | null;
}

/** A reset command parsed, validated and (with a secret) authenticated; a refusal says why. */
export function parseAreaReset(payload: Buffer, agentId: string, secret: string | null): AreaReset | AreaResetRefusal {
  if (payload.length > MAX_RESET_BYTES) return { refused: `${payload.length} bytes, more than ${MAX_RESET_BYTES}`, status: 400, requestId: null };
  const context = `areas reset agent:${agentId}`;
  // Its form first, so a refused signature still gets its reply under the request_id the sender waits for.
  const opened = openSignedObject(context, payload, null);
  if ('refused' in opened) return { refused: opened.refused, status: 400, requestId: null };
  const parsed = resetSchema.safeParse(opened.data);
  if (!parsed.success) return { refused: problemsInOneLine(parsed.error.issues), status: 400, requestId: null };
  const requestId = parsed.data.request_id ?? null;
  const area = parsed.data.area ?? null;
  const by = parsed.data.by ?? null;
  if (secret === null) return { area, by, requestId, issuedAt: null };
  const authenticated = openSignedObject(context, payload, secret);
  if ('refused' in authenticated) return { refused: authenticated.refused, status: 401, requestId };
  if (requestId === null) return { refused: 'a signed reset needs a request_id', status: 401, requestId };
  return { area, by, requestId, issuedAt: authenticated.issuedAt };
}
