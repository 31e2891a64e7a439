import * as z from 'zod';
import { problemsFromZod } from '../util/issues.js';

/**
 * `P/agents/<id>/health` (retained, QoS 1), in the manner of zigbee2mqtt's `bridge/health`: what an operator needs
 * to know the agent is well before it matters. Every field is documented in docs/mqtt.md ("Health"); counts and
 * durations carry their unit in their name (`_s`, `_ms`), memory is in bytes.
 */

const count = z.number().int().nonnegative();

const doorHealthSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  /** The lock as the controller holds it. */
  lock: z.enum(['LOCKED', 'UNLOCKED']),
  /** When a timed unlock ends (ISO), null when locked or held open. */
  relock_at: z.string().nullable(),
  /** The contact: true open, false closed, null without a contact. */
  open: z.boolean().nullable(),
  lockdown: z.boolean(),
  tamper: z.enum(['ON', 'OFF']).nullable(),
  /** The unlock schedule's state (`schedule.state` of the door state), null without a schedule. */
  schedule: z.string().nullable(),
  /** Whether its reader is connected, null without a reader. */
  reader_online: z.boolean().nullable(),
});

export const healthSchema = z.object({
  /** When it was gathered (ISO). */
  at: z.string(),
  uptime_s: count,
  /** When the agent started (ISO): Home Assistant's timestamp sensor; absent from an agent from before it. */
  started_at: z.string().optional(),
  version: z.string(),
  /** Audit events the broker has not acknowledged yet (the outbox). */
  outbox_depth: count,
  cache: z.object({
    /** The service's directory revision the cache holds (null: none, e.g. an imported cache). */
    revision: count.nullable(),
    /** Seconds since the cache was last refreshed (a successful sync, or an import); null when never. */
    age_s: count.nullable(),
    /**
     * The cache found damaged (every credential refused, the doors locked): since when (ISO), what SQLite said, and
     * how it is rebuilt (`automatic`: from the service, by the agent; `manual`: by the operator). null while sound;
     * absent from an agent from before it.
     */
    damaged: z
      .object({ since: z.string(), error: z.string(), rebuild: z.enum(['automatic', 'manual']) })
      .nullable()
      .optional(),
  }),
  readers: z.object({ online: count, total: count, per_door: z.record(z.string(), z.boolean()) }),
  /** The wall clock is synchronized (NTP, or agent.rtc) and not before 2024: schedules and guest links follow it. */
  clock_trusted: z.boolean(),
  doors: z.array(doorHealthSchema),
  memory: z.object({ rss: count, heap_used: count }),
  /** The 99th percentile of the event loop's delay over the last period (ms); null before a measure. */
  event_loop_lag_p99_ms: z.number().nonnegative().nullable(),
});

export type Health = z.infer<typeof healthSchema>;
export type DoorHealth = z.infer<typeof doorHealthSchema>;

export function healthPayload(health: Health): string {
  return JSON.stringify(health);
}

/** Parses a health message (a client's, a test's); throws naming the fields that are wrong. @internal */
export function parseHealth(payload: Buffer | string): Health {
  const result = healthSchema.safeParse(JSON.parse(payload.toString()));
  if (!result.success) {
    throw new Error(
      `not a health message: ${problemsFromZod(result.error.issues)
        .map((p) => `${p.path}: ${p.message}`)
        .join('; ')}`,
    );
  }
  return result.data;
}
