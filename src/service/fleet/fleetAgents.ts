import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type * as z from 'zod';
import type { BoardFacts, Grant } from '../../api/fleet.js';
import { signFleet } from '../../protocol/fleetSigning.js';
import { issueKey } from '../apiKeys.js';
import { BadRequest } from '../badRequest.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { FleetKeys } from './identityKey.js';

/** An enrolment as stored (fleet_agents): pending until an operator adopts or refuses it. */
export interface FleetAgentRow {
  enrolment_id: string;
  agent_id: string | null;
  state: 'pending' | 'adopted' | 'refused';
  /** The SHA-256 of its poll secret; null once the agent confirmed its grant (the secret is dead). */
  poll_sha256: string | null;
  facts: string;
  enrolled_at: number;
  decided_at: number | null;
  decided_by: string | null;
  reason: string | null;
  key_id: number | null;
  report: string | null;
  reported_at: number | null;
}

/** JSON kept by the service, read back through its schema: null when it does not hold (never a 500 for a list: its facts, its report). */
export function storedJson<T>(schema: z.ZodType<T>, text: string | null): T | null {
  if (text === null) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Where a poll stands: the enrolment, or why its secret is not taken. */
type PollCheck = { row: FleetAgentRow } | { refused: 'unknown' | 'wrong' | 'delivered' };

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const COLUMNS = 'enrolment_id, agent_id, state, poll_sha256, facts, enrolled_at, decided_at, decided_by, reason, key_id, report, reported_at';

/** An agent id made of a host name: its first label, what an id may not hold made "-", at most 60 characters. */
export function agentIdFromHostname(hostname: string): string {
  const id = (hostname.split('.')[0] ?? '')
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return id === '' ? 'agent' : id;
}

/**
 * The agents that used an enrolment code (docs/fleet.md, "Enrolment"): pending until an operator adopts or
 * refuses them; an adopted one is handed its grant (a DOOR key of its own, its broker login) until it confirms.
 */
export class FleetAgents {
  constructor(private readonly db: SqlDb) {}

  /** A new pending enrolment (in the caller's transaction, with the code's use): its id and its poll secret. */
  async createPending(facts: BoardFacts, now: number): Promise<{ enrolmentId: string; pollSecret: string }> {
    const enrolmentId = randomUUID();
    const pollSecret = randomBytes(32).toString('base64url');
    await this.db.run("INSERT INTO fleet_agents (enrolment_id, state, poll_sha256, facts, enrolled_at) VALUES (?, 'pending', ?, ?, ?)", [
      enrolmentId,
      sha256(pollSecret),
      JSON.stringify(facts),
      now,
    ]);
    return { enrolmentId, pollSecret };
  }

  async get(enrolmentId: string): Promise<FleetAgentRow | undefined> {
    return this.db.get<FleetAgentRow>(`SELECT ${COLUMNS} FROM fleet_agents WHERE enrolment_id = ?`, [enrolmentId]);
  }

  /** Every enrolment, the newest first. */
  async list(): Promise<FleetAgentRow[]> {
    return this.db.all<FleetAgentRow>(`SELECT ${COLUMNS} FROM fleet_agents ORDER BY enrolled_at DESC, enrolment_id`);
  }

  /** The enrolment of a poll, when `pollSecret` is its secret (compared by SHA-256, in constant time). */
  async checkPoll(enrolmentId: string, pollSecret: string): Promise<PollCheck> {
    const row = await this.get(enrolmentId);
    if (!row) return { refused: 'unknown' };
    if (row.poll_sha256 === null) return { refused: 'delivered' };
    const given = Buffer.from(sha256(pollSecret), 'hex');
    return timingSafeEqual(given, Buffer.from(row.poll_sha256, 'hex')) ? { row } : { refused: 'wrong' };
  }

  /**
   * Adopts a pending enrolment as `agentId` (default: its host name made an agent id, then made unique). 404 for
   * an unknown enrolment, 409 when it is not pending or the id given is taken.
   */
  async adopt(enrolmentId: string, agentId: string | undefined, now: number, by: string): Promise<string> {
    return this.db.transaction(async () => {
      const row = await this.pending(enrolmentId, 'adopted');
      let id = agentId;
      if (id !== undefined) {
        const holder = await this.db.value<string>('SELECT enrolment_id FROM fleet_agents WHERE agent_id = ?', [id]);
        if (holder !== undefined) throw new BadRequest(`agent_id: ${id} is the id of another agent (enrolment ${holder}): choose another`, 409);
      } else {
        id = await this.freeId(agentIdFromHostname((JSON.parse(row.facts) as BoardFacts).hostname));
      }
      await this.db.run("UPDATE fleet_agents SET state = 'adopted', agent_id = ?, decided_at = ?, decided_by = ? WHERE enrolment_id = ?", [
        id,
        now,
        by,
        enrolmentId,
      ]);
      return id;
    });
  }

  /** Refuses a pending enrolment, with why (the agent prints it). 404 unknown, 409 when it is not pending. */
  async refuse(enrolmentId: string, reason: string, now: number, by: string): Promise<void> {
    await this.db.transaction(async () => {
      await this.pending(enrolmentId, 'refused');
      await this.db.run("UPDATE fleet_agents SET state = 'refused', reason = ?, decided_at = ?, decided_by = ? WHERE enrolment_id = ?", [
        reason,
        now,
        by,
        enrolmentId,
      ]);
    });
  }

  /**
   * A fresh DOOR key for an adopted agent that has not confirmed yet, the one handed before revoked (a lost answer
   * is simply asked again); null when the enrolment is no longer adopted and unconfirmed.
   */
  async freshKey(enrolmentId: string, now: number): Promise<string | null> {
    return this.db.transaction(async () => {
      const row = await this.get(enrolmentId);
      if (row?.state !== 'adopted' || row.poll_sha256 === null) return null;
      const { key, row: keyRow } = issueKey('DOOR', 0, now);
      const keyId = await this.db.value<number>('INSERT INTO api_keys (key_hash, rank, created_at, expires_at) VALUES (?, ?, ?, ?) RETURNING key_id', [
        keyRow.key_hash,
        keyRow.rank,
        keyRow.created_at,
        keyRow.expires_at,
      ]);
      if (row.key_id !== null) await this.db.run('DELETE FROM api_keys WHERE key_id = ?', [row.key_id]);
      await this.db.run('UPDATE fleet_agents SET key_id = ? WHERE enrolment_id = ?', [Number(keyId), enrolmentId]);
      return key;
    });
  }

  /**
   * The agent says it wrote its files, with the key just granted (its digest): the poll secret dies. True when
   * that key is the enrolment's (again: confirming twice is no error), false otherwise.
   */
  async confirm(enrolmentId: string, keyDigest: string): Promise<boolean> {
    return this.db.transaction(async () => {
      const held = await this.db.value<string>(
        "SELECT k.key_hash FROM fleet_agents f JOIN api_keys k ON k.key_id = f.key_id WHERE f.enrolment_id = ? AND f.state = 'adopted'",
        [enrolmentId],
      );
      if (held === undefined || !timingSafeEqual(Buffer.from(held, 'hex'), Buffer.from(keyDigest, 'hex'))) return false;
      await this.db.run('UPDATE fleet_agents SET poll_sha256 = NULL WHERE enrolment_id = ?', [enrolmentId]);
      return true;
    });
  }

  /** The adopted agent whose DOOR key has this digest (apiKeys.ts keyDigest), or null. */
  async agentOfKeyDigest(keyDigest: string): Promise<string | null> {
    const id = await this.db.value<string>(
      "SELECT f.agent_id FROM fleet_agents f JOIN api_keys k ON k.key_id = f.key_id WHERE k.key_hash = ? AND f.state = 'adopted'",
      [keyDigest],
    );
    return id ?? null;
  }

  /** The pending enrolment of that id, or the refusal of making it `next` (404 unknown, 409 decided already). */
  private async pending(enrolmentId: string, next: 'adopted' | 'refused'): Promise<FleetAgentRow> {
    const row = await this.get(enrolmentId);
    if (!row) throw new BadRequest(`no enrolment ${enrolmentId}`, 404);
    if (row.state !== 'pending') {
      const verb = next === 'adopted' ? 'adopt' : 'refuse';
      throw new BadRequest(`enrolment ${enrolmentId} is ${row.state}${row.agent_id ? ` (agent ${row.agent_id})` : ''}, not pending: nothing to ${verb}`, 409);
    }
    return row;
  }

  /** `base`, or base-2, base-3, ... : the first no agent has. */
  private async freeId(base: string): Promise<string> {
    const taken = new Set(await this.db.column<string>('SELECT agent_id FROM fleet_agents WHERE agent_id IS NOT NULL'));
    for (let n = 1; ; n++) {
      const id = n === 1 ? base : `${base}-${n}`;
      if (!taken.has(id) && AGENT_ID.test(id)) return id;
    }
  }
}

/** The grant of an adopted agent, signed (purpose 'grant') with the service's identity key. */
export function signedGrant(keys: FleetKeys, grant: Grant): { state: 'adopted'; grant: Grant; signature: string } {
  return { state: 'adopted', grant, signature: signFleet(keys.identity, 'grant', grant) };
}
