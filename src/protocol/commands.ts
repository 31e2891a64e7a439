import * as z from 'zod';
import { MAX_UNLOCK_SECONDS } from '../core/lockState.js';
import { signatureMatches, signedString } from './signing.js';
import { problemsFromZod } from '../util/issues.js';
import { withProps } from '../core/objects.js';

/** What a command asks of the door: lock, or unlock for `seconds` (null = hold open; 'default' = unlockSeconds). */
export type LockAction = { lock: true } | { lock: false; seconds: number | null | 'default' };

export interface ParsedCommand {
  action: LockAction;
  requestId: string | null;
  /** issued_at of a signed command (unix seconds). */
  issuedAt?: number;
  /** For signed commands: used for the replay cache. */
  signed: boolean;
  /**
   * A command in Home Assistant's form (a plain LOCK, UNLOCK or OPEN, or `{"action":...,"code":...}` from the
   * lock's command template), with the code the user typed (null: none). Absent for the JSON commands.
   */
  homeAssistant?: { code: string | null };
}

export interface CommandError {
  status: 400 | 401 | 409;
  error: string;
  requestId: string | null;
}

/** @internal */
export const MAX_COMMAND_BYTES = 16 * 1024;

// A Map, not an object literal: "constructor" or "__proto__" must not find something on a prototype.
const PLAIN_COMMANDS = new Map<string, LockAction>([
  ['LOCK', { lock: true }],
  ['UNLOCK', { lock: false, seconds: null }],
  ['OPEN', { lock: false, seconds: 'default' }],
]);

/** Home Assistant's lock with a code (mqtt.homeAssistant.codeFile): its command template renders this. */
const homeAssistantCommandSchema = z.strictObject({
  action: z.enum(['LOCK', 'UNLOCK', 'OPEN'], { error: 'must be LOCK, UNLOCK or OPEN' }),
  code: z.string().max(1024).nullable().optional(),
});

/** POST /setlockstatus as JSON, plus the signing fields of docs/mqtt.md (signed commands). */
const jsonCommandSchema = z.object({
  lock_state: z.boolean(),
  unlock_time: z
    .number({ error: 'must be a whole number of seconds' })
    .int('must be a whole number of seconds')
    .min(1, `must be from 1 to ${MAX_UNLOCK_SECONDS} s; for a longer hold, unlock without unlock_time`)
    .max(MAX_UNLOCK_SECONDS, `must be from 1 to ${MAX_UNLOCK_SECONDS} s; for a longer hold, unlock without unlock_time`)
    .optional(),
  uuid: z.string().optional(),
  request_id: z.string().min(1).max(128).optional(),
  issued_at: z.number().int().nonnegative().optional(),
  signature: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (HMAC-SHA256)')
    .optional(),
});

export interface CommandContext {
  /** Lower case, as configured UUIDs are normalized. */
  doorUuid: string;
  /** The command secret when commands must be signed. */
  secret: string | null;
  maxAgeSeconds: number;
  nowSeconds: number;
  /** Whether a request_id was already executed (persisted replay cache). */
  seen: (requestId: string) => boolean;
}

/**
 * Parses and authenticates a command payload from `P/doors/<uuid>/set`. Pure apart from the replay lookup.
 * Returns the command, or the error reply (400 invalid, 401 signature missing or wrong, 409 stale or replayed).
 */
export function parseCommand(payload: Buffer, ctx: CommandContext): ParsedCommand | CommandError {
  if (payload.length > MAX_COMMAND_BYTES) {
    return { status: 400, error: `command of ${payload.length} bytes refused (at most ${MAX_COMMAND_BYTES})`, requestId: null };
  }
  const text = payload.toString('utf8').trim();
  const plainAction = PLAIN_COMMANDS.get(text);
  if (plainAction) {
    if (ctx.secret !== null) {
      return { status: 401, error: `commands must be signed at this door; a plain ${text} is refused`, requestId: null };
    }
    return { action: plainAction, requestId: null, signed: false, homeAssistant: { code: null } };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return { status: 400, error: 'payload is neither JSON nor LOCK, UNLOCK or OPEN', requestId: null };
  }
  const requestIdOf = (value: unknown) =>
    typeof value === 'object' && value !== null && typeof (value as { request_id?: unknown }).request_id === 'string'
      ? (value as { request_id: string }).request_id.slice(0, 128)
      : null;
  if (typeof data === 'object' && data !== null && 'action' in data) return parseHomeAssistantCommand(data, ctx);
  const result = jsonCommandSchema.safeParse(data);
  if (!result.success) {
    const problems = problemsFromZod(result.error.issues);
    return { status: 400, error: problems.map((p) => `${p.path}: ${p.message}`).join('; '), requestId: requestIdOf(data) };
  }
  const cmd = result.data;
  const requestId = cmd.request_id ?? null;
  if (cmd.uuid !== undefined && cmd.uuid.toLowerCase() !== ctx.doorUuid) {
    return { status: 400, error: `uuid ${cmd.uuid} does not match the door of this topic`, requestId };
  }
  if (cmd.lock_state && cmd.unlock_time !== undefined) {
    return { status: 400, error: 'unlock_time goes only with lock_state false', requestId };
  }
  const action: LockAction = cmd.lock_state ? { lock: true } : { lock: false, seconds: cmd.unlock_time ?? null };
  if (ctx.secret === null) return { action, requestId, signed: false };

  if (cmd.signature === undefined || cmd.request_id === undefined || cmd.issued_at === undefined) {
    return { status: 401, error: 'signed command required: signature, request_id and issued_at', requestId };
  }
  const signed = signedString({
    uuid: ctx.doorUuid,
    lockState: cmd.lock_state,
    unlockTime: cmd.unlock_time,
    requestId: cmd.request_id,
    issuedAt: cmd.issued_at,
  });
  if (!signatureMatches(ctx.secret, signed, cmd.signature)) return { status: 401, error: 'signature does not match', requestId };
  if (Math.abs(ctx.nowSeconds - cmd.issued_at) > ctx.maxAgeSeconds) {
    return {
      status: 409,
      error: `command issued ${ctx.nowSeconds - cmd.issued_at} s ago: older than ${ctx.maxAgeSeconds} s (or the clocks differ)`,
      requestId,
    };
  }
  if (ctx.seen(cmd.request_id)) return { status: 409, error: `request_id ${cmd.request_id} was already executed`, requestId };
  return { action, requestId, signed: true, issuedAt: cmd.issued_at };
}

/** `{"action":"UNLOCK","code":"1234"}`: Home Assistant cannot sign, so it is refused like a plain word in signed mode. */
function parseHomeAssistantCommand(data: object, ctx: CommandContext): ParsedCommand | CommandError {
  const result = homeAssistantCommandSchema.safeParse(data);
  if (!result.success) {
    const problems = problemsFromZod(result.error.issues);
    return { status: 400, error: problems.map((p) => `${p.path}: ${p.message}`).join('; '), requestId: null };
  }
  const { action, code } = result.data;
  if (ctx.secret !== null) return { status: 401, error: `commands must be signed at this door; Home Assistant's ${action} is refused`, requestId: null };
  return { action: PLAIN_COMMANDS.get(action)!, requestId: null, signed: false, homeAssistant: { code: code ?? null } };
}

export function isCommandError(value: ParsedCommand | CommandError): value is CommandError {
  return 'status' in value;
}

/**
 * The reply to a command (on its MQTT 5 response topic, else `P/doors/<uuid>/reply`):
 * `{"status":200,"success":"..."}` or `{"status":4xx,"error":"..."}`, with the command's `request_id` when it had one.
 */
export function commandReplyPayload(body: { status: number; success: string } | { status: number; error: string }, requestId: string | null): string {
  return JSON.stringify(requestId === null ? body : withProps(body, { request_id: requestId }));
}
