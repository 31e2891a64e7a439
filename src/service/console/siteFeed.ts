import * as z from 'zod';
import { AVAILABILITY_OFFLINE, AVAILABILITY_ONLINE } from '../../protocol/doorState.js';
import { healthSchema, type Health } from '../../protocol/health.js';

/**
 * What the console shows live, from the service's own broker connection (docs/mqtt.md): each door's retained
 * state, each agent's availability and health, and what the doors' events say of the doors (held or forced open).
 * The events themselves are kept in the database (audit/eventIngest.ts) and read from there. Every payload is
 * validated; one that does not parse is dropped and counted, never shown half-read.
 */

const doorStateSchema = z.object({
  state: z.enum(['LOCKED', 'UNLOCKED']),
  relock_at: z.string().nullable().optional(),
  door: z.enum(['OPEN', 'CLOSED']).nullable().optional(),
  changed_at: z.string().nullable().optional(),
  cause: z.string().max(500).optional(),
  lockdown: z.boolean().optional(),
  tamper: z.enum(['ON', 'OFF']).nullable().optional(),
  emergency: z.boolean().optional(),
});
export type DoorStateMessage = z.output<typeof doorStateSchema>;

const eventSchema = z.object({
  type: z.string().min(1).max(64),
  at: z.string().max(40),
  id: z.string().max(100).optional(),
  door: z.string().max(100).nullable().optional(),
  who: z.string().max(300).nullable().optional(),
  reason: z.string().max(200).nullable().optional(),
  hint: z.string().max(40).nullable().optional(),
  cause: z.string().max(300).nullable().optional(),
  /** A decision's credential: card, pin, token (a guest link's QR code), card_and_pin. */
  kind: z.string().max(40).nullable().optional(),
  /** The access level that granted. */
  level: z.string().max(200).nullable().optional(),
  holders: z
    .array(
      z.object({ email_id: z.number().int().optional(), magic_link_id: z.string().max(100).optional(), reason: z.string().max(200).nullable().optional() }),
    )
    .max(100)
    .nullable()
    .optional(),
});
export type AuditEvent = z.output<typeof eventSchema>;

/** An event as the console shows it (the fields it reads, checked); null when one of them is not as expected. */
export function parseAuditEvent(value: unknown): AuditEvent | null {
  const parsed = eventSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

export interface DoorLive {
  state: DoorStateMessage | null;
  /** From the door's events: door_held_open or door_forced until the door closes again. */
  held: boolean;
  forced: boolean;
}

export interface AgentLive {
  id: string;
  /** The retained availability: null until one came. */
  online: boolean | null;
  health: Health | null;
}

export type SiteChange = { kind: 'door'; uuid: string } | { kind: 'agent'; id: string };

const SEGMENT = /^[A-Za-z0-9_.:-]{1,100}$/;

export class SiteFeed {
  private readonly doors = new Map<string, DoorLive>();
  private readonly agents = new Map<string, AgentLive>();
  private readonly listeners = new Set<(change: SiteChange) => void>();
  /** Messages dropped because they did not parse. */
  dropped = 0;

  constructor(private readonly prefix: string) {}

  /** The topic filters to subscribe to. */
  filters(): string[] {
    const p = this.prefix;
    return [`${p}/doors/+/state`, `${p}/doors/+/events`, `${p}/agents/+/status`, `${p}/agents/+/health`];
  }

  onMessage(topic: string, payload: Buffer): void {
    const rest = topic.startsWith(`${this.prefix}/`) ? topic.slice(this.prefix.length + 1).split('/') : [];
    if (rest.length !== 3 || !SEGMENT.test(rest[1]!)) return;
    const [family, id, leaf] = rest as [string, string, string];
    try {
      if (family === 'doors' && leaf === 'state') this.doorState(id.toLowerCase(), payload);
      else if (family === 'doors' && leaf === 'events') this.event(payload);
      else if (family === 'agents' && leaf === 'status') this.availability(id, payload.toString('utf8'));
      else if (family === 'agents' && leaf === 'health') this.health(id, payload);
    } catch {
      this.dropped++;
    }
  }

  subscribe(listener: (change: SiteChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  door(uuid: string): DoorLive {
    return this.doors.get(uuid) ?? { state: null, held: false, forced: false };
  }

  agentList(): AgentLive[] {
    return [...this.agents.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The agent whose health lists the door, or null when none has said so yet. */
  agentOf(uuid: string): AgentLive | null {
    for (const agent of this.agents.values()) if (agent.health?.doors.some((d) => d.uuid === uuid)) return agent;
    return null;
  }

  private emit(change: SiteChange): void {
    for (const listener of this.listeners) listener(change);
  }

  private doorState(uuid: string, payload: Buffer): void {
    if (payload.length === 0) return;
    const state = doorStateSchema.parse(JSON.parse(payload.toString('utf8')));
    this.doors.set(uuid, { ...this.door(uuid), state });
    this.emit({ kind: 'door', uuid });
  }

  private event(payload: Buffer): void {
    const event = eventSchema.parse(JSON.parse(payload.toString('utf8')));
    const uuid = event.door?.toLowerCase();
    if (uuid && ['door_held_open', 'door_forced', 'door_closed'].includes(event.type)) {
      const live = this.door(uuid);
      this.doors.set(uuid, {
        ...live,
        held: event.type === 'door_held_open' || (live.held && event.type !== 'door_closed'),
        forced: event.type === 'door_forced' || (live.forced && event.type !== 'door_closed'),
      });
      this.emit({ kind: 'door', uuid });
    }
  }

  private agent(id: string): AgentLive {
    let agent = this.agents.get(id);
    if (!agent) {
      agent = { id, online: null, health: null };
      this.agents.set(id, agent);
    }
    return agent;
  }

  private availability(id: string, text: string): void {
    if (text !== AVAILABILITY_ONLINE && text !== AVAILABILITY_OFFLINE) throw new Error('not an availability');
    this.agent(id).online = text === AVAILABILITY_ONLINE;
    this.emitAgent(id);
  }

  private health(id: string, payload: Buffer): void {
    if (payload.length === 0) return;
    this.agent(id).health = healthSchema.parse(JSON.parse(payload.toString('utf8')));
    this.emitAgent(id);
  }

  /** An agent's change is also a change of each of its doors (online/offline). */
  private emitAgent(id: string): void {
    this.emit({ kind: 'agent', id });
    for (const d of this.agents.get(id)?.health?.doors ?? []) this.emit({ kind: 'door', uuid: d.uuid });
  }
}
