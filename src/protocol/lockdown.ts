import * as z from 'zod';
import { isCalendarDate } from '../core/schedule.js';
import { parseRetained, retainedPayload, type RetainedMessage, type RetainedRefusal } from './retainedMessages.js';

/**
 * Lockdown and holidays on MQTT (issue 14), shared by the agent and the reference service.
 * - `P/agents/<id>/lockdown` and `P/doors/<uuid>/lockdown`, retained: `{"lockdown":true,"by":"...","reason":"..."}`
 *   starts a lockdown of the agent's doors or of one door; `{"lockdown":false,"by":"..."}` (or, unsigned, an empty
 *   payload) ends it. Signed like every retained message (retainedMessages.ts) over "lockdown <scope>".
 * - `P/holidays`, retained: `{"dates":["2026-12-25", ...]}`, signed over "holidays".
 */

/** Whose lockdown: the agent's (every door it controls) or one door's. */
export type LockdownScope = { kind: 'agent'; id: string } | { kind: 'door'; uuid: string };

export function scopeName(scope: LockdownScope): string {
  return scope.kind === 'agent' ? `agent:${scope.id}` : `door:${scope.uuid}`;
}

function lockdownContext(scope: LockdownScope): string {
  return `lockdown ${scopeName(scope)}`;
}

const HOLIDAYS_CONTEXT = 'holidays';

export const lockdownMessageSchema = z.object({
  lockdown: z.boolean({ error: 'expected true (start) or false (end)' }),
  by: z.string().trim().min(1, 'name who set it').max(128),
  reason: z.string().max(256).optional(),
});
export type LockdownMessage = z.output<typeof lockdownMessageSchema>;

const date = z.string().refine(isCalendarDate, 'expected a date YYYY-MM-DD');
export const holidaysMessageSchema = z.object({ dates: z.array(date).max(1000) });
export type HolidaysMessage = z.output<typeof holidaysMessageSchema>;

export function lockdownTopic(prefix: string, scope: LockdownScope): string {
  return scope.kind === 'agent' ? `${prefix}/agents/${scope.id}/lockdown` : `${prefix}/doors/${scope.uuid}/lockdown`;
}

export function holidaysTopic(prefix: string): string {
  return `${prefix}/holidays`;
}

export function lockdownPayload(scope: LockdownScope, message: LockdownMessage, secret: string | null, issuedAt: number): string {
  return retainedPayload(lockdownContext(scope), { ...message }, secret, issuedAt);
}

export function parseLockdownMessage(scope: LockdownScope, payload: Buffer, secret: string | null): RetainedMessage<LockdownMessage> | RetainedRefusal {
  return parseRetained(lockdownContext(scope), payload, lockdownMessageSchema, secret);
}

/** Retained `P/agents/<id>/lockdown/state`: the agent-wide lockdown as the agent holds it (`since` in wall ms). */
export function lockdownStatePayload(record: { active: boolean; by: string | null; reason: string | null; since: number | null }): string {
  return JSON.stringify({
    lockdown: record.active,
    by: record.by,
    reason: record.reason,
    since: record.since === null ? null : new Date(record.since).toISOString(),
  });
}

export function holidaysPayload(message: HolidaysMessage, secret: string | null, issuedAt: number): string {
  return retainedPayload(HOLIDAYS_CONTEXT, { ...message }, secret, issuedAt);
}

export function parseHolidaysMessage(payload: Buffer, secret: string | null): RetainedMessage<HolidaysMessage> | RetainedRefusal {
  return parseRetained(HOLIDAYS_CONTEXT, payload, holidaysMessageSchema, secret);
}
