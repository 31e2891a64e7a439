/**
 * What Home Assistant's event entities fire, in one table (docs/mqtt.md, "Home Assistant"): each row is one
 * `event_type`, the entity that shows it and the audit event it comes from. Discovery lists each entity's
 * `event_types` from it; the publisher (handlers/homeAssistantEvents.ts) maps each audit event through it and
 * publishes `{"event_type":...,...attributes}` on the entity's topic, once per occurrence, while connected.
 *
 * A new event type is one row. Rows whose audit event does not exist yet (other branches add them) are listed
 * already: Home Assistant knows the type, and it fires once the agent records such events.
 */

/** The event entities: per door (`access`, `alarm`) or per agent (`supervision`, a diagnostic entity). */
export const HA_EVENT_ENTITIES = {
  access: { scope: 'door' },
  alarm: { scope: 'door' },
  supervision: { scope: 'agent' },
} as const satisfies Record<string, { scope: 'door' | 'agent' }>;

export type HaEventEntity = keyof typeof HA_EVENT_ENTITIES;

/** An audit event as the publisher sees it: its type, door and fields (its `data`, with `id` and `at` when written). */
export interface HaSourceEvent {
  type: string;
  door: string | null;
  fields: Record<string, unknown>;
}

interface HaEventRow {
  /** The `event_type` Home Assistant sees. */
  eventType: string;
  entity: HaEventEntity;
  /** The audit event type it comes from (default: the same name); null: published by its own path (a refused command). */
  from?: string | null;
  /** When one audit type gives two event types: which of its events this row takes. */
  when?: (fields: Record<string, unknown>) => boolean;
  /** The attributes Home Assistant shows (default: every field of the event). */
  attributes?: (fields: Record<string, unknown>) => Record<string, unknown>;
}

/** A decision: who opened, by which level, why not, with the credential's masked hint (never the holders' ids). */
const decision = (f: Record<string, unknown>) => ({
  who: f.who ?? null,
  level: f.level ?? null,
  reason: f.reason ?? null,
  kind: f.kind ?? null,
  credential: f.hint ?? null,
  // A door with an exit reader says which reader (docs/areas.md); an area's refusal names the area.
  ...pick(f, ['direction', 'area', 'id', 'at', 'summary', 'count']),
});

const cleared = (f: Record<string, unknown>) => f.state === 'cleared';

/** @internal */
export const HA_EVENTS: readonly HaEventRow[] = [
  { eventType: 'access_granted', entity: 'access', attributes: decision },
  { eventType: 'access_denied', entity: 'access', attributes: decision },
  // A remote unlock refused (lockdown, a wrong Home Assistant code; emergency, interlock): `reason`, `error`.
  { eventType: 'unlock_refused', entity: 'access', from: null },
  { eventType: 'granted_not_opened', entity: 'access' },
  // Doors that work together (docs/areas.md): a two-person door's first tap; a holder soft anti-passback let through.
  { eventType: 'awaiting_second_person', entity: 'access', attributes: decision },
  { eventType: 'passback_violation', entity: 'access' },
  { eventType: 'duress', entity: 'alarm' },
  { eventType: 'tamper', entity: 'alarm', when: (f) => !cleared(f) },
  { eventType: 'tamper_cleared', entity: 'alarm', from: 'tamper', when: cleared },
  { eventType: 'door_forced', entity: 'alarm' },
  { eventType: 'door_held_open', entity: 'alarm' },
  { eventType: 'emergency_release', entity: 'alarm' },
  { eventType: 'emergency_cleared', entity: 'alarm' },
  { eventType: 'emergency_wiring', entity: 'alarm' },
  { eventType: 'emergency_wiring_cleared', entity: 'alarm' },
  { eventType: 'power_lost', entity: 'supervision' },
  { eventType: 'power_restored', entity: 'supervision' },
  { eventType: 'battery_low', entity: 'supervision' },
  { eventType: 'battery_ok', entity: 'supervision' },
  { eventType: 'link_lost', entity: 'supervision' },
  { eventType: 'link_restored', entity: 'supervision' },
  { eventType: 'cache_too_old', entity: 'supervision' },
  { eventType: 'cache_fresh', entity: 'supervision' },
  { eventType: 'cache_damaged', entity: 'supervision' },
  { eventType: 'cache_rebuilt', entity: 'supervision' },
  { eventType: 'config_changed', entity: 'supervision' },
];

function pick(fields: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (fields[key] !== undefined) out[key] = fields[key];
  return out;
}

/** The rows by the audit type they come from. */
const BY_SOURCE = new Map<string, HaEventRow[]>();
for (const row of HA_EVENTS) {
  const from = row.from === undefined ? row.eventType : row.from;
  if (from !== null) BY_SOURCE.set(from, [...(BY_SOURCE.get(from) ?? []), row]);
}

/** The event types one entity fires (its discovery's `event_types`). */
export function haEventTypes(entity: HaEventEntity): string[] {
  return HA_EVENTS.filter((row) => row.entity === entity).map((row) => row.eventType);
}

/** Whether an audit type is shown in Home Assistant (a cheap test before any work). */
export function isHaSource(type: string): boolean {
  return BY_SOURCE.has(type);
}

export interface HaEventMessage {
  entity: HaEventEntity;
  /** The door whose entity shows it; null: the agent's. */
  door: string | null;
  /** `{"event_type":...,...attributes}` */
  payload: Record<string, unknown>;
}

/**
 * The Home Assistant event of an audit event, or null when none shows it. A door entity's event without a door
 * has no entity to fire (none is published); an agent entity's event keeps its `door` as an attribute.
 */
export function haEventOf(event: HaSourceEvent): HaEventMessage | null {
  const row = BY_SOURCE.get(event.type)?.find((r) => r.when?.(event.fields) ?? true);
  if (!row) return null;
  return haEventMessage(row, event.door, event.fields);
}

/** A refused remote unlock (its reason: lockdown, wrong_code, ...) as Home Assistant's `unlock_refused`. */
export function unlockRefusedEvent(door: string, fields: { reason: string; error: string; at: string }): HaEventMessage {
  const row = HA_EVENTS.find((r) => r.eventType === 'unlock_refused')!;
  return haEventMessage(row, door, fields)!; // a door entity, and a door
}

function haEventMessage(row: HaEventRow, door: string | null, fields: Record<string, unknown>): HaEventMessage | null {
  const scope = HA_EVENT_ENTITIES[row.entity].scope;
  if (scope === 'door' && door === null) return null;
  const attributes = row.attributes ? row.attributes(fields) : fields;
  return {
    entity: row.entity,
    door: scope === 'door' ? door : null,
    payload: Object.assign({}, attributes, scope === 'agent' ? { door } : {}, { event_type: row.eventType }),
  };
}
