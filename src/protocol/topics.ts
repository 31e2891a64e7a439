/**
 * MQTT topics of docs/mqtt.md (P = mqtt.topicPrefix), shared by the agent and the reference service: the
 * door and guest-link topics here, the agent's own ones in AgentTopics.
 */
export class DoorTopics {
  constructor(readonly prefix: string) {}

  set(door: string): string {
    return `${this.prefix}/doors/${door}/set`;
  }
  reply(door: string): string {
    return `${this.prefix}/doors/${door}/reply`;
  }
  state(door: string): string {
    return `${this.prefix}/doors/${door}/state`;
  }
  events(door: string): string {
    return `${this.prefix}/doors/${door}/events`;
  }
  /** Retained lockdown of one door (in): protocol/lockdown.ts. */
  lockdown(door: string): string {
    return `${this.prefix}/doors/${door}/lockdown`;
  }
  /** Alarms published at once (out, QoS 1): `{"event_type":"duress"|"tamper"|"door_forced"|"door_held_open",...}`. */
  alarm(door: string): string {
    return `${this.prefix}/doors/${door}/alarm`;
  }
  /** Retained `{"dates":[...]}`: holidays published by the service. */
  get holidays(): string {
    return `${this.prefix}/holidays`;
  }
  /** Every door's reply topic (the service's subscription). */
  get allReplies(): string {
    return `${this.prefix}/doors/+/reply`;
  }
  /** Retained `{"revision":N,"at":ISO,"history":ID,"tag":TAG}`: the service's directory revision (protocol/directory.ts). */
  get directoryRevision(): string {
    return `${this.prefix}/directory/revision`;
  }
  guestLink(id: string): string {
    return `${this.prefix}/guest-links/${id}`;
  }
  /** `{"chain","from","to"}` to one agent (in, QoS 1, not retained): send those audit events again (protocol/auditResend.ts). */
  auditResendOf(agentId: string): string {
    return `${this.prefix}/agents/${agentId}/audit/resend`;
  }
  get guestLinks(): string {
    return `${this.prefix}/guest-links/+`;
  }

  /** The door uuid of a `.../doors/<uuid>/set` topic, or null. */
  doorOfCommand(topic: string): string | null {
    const head = `${this.prefix}/doors/`;
    if (!topic.startsWith(head) || !topic.endsWith('/set')) return null;
    const uuid = topic.slice(head.length, -'/set'.length);
    return uuid === '' || uuid.includes('/') ? null : uuid;
  }

  /** The magic_link_id of a `.../guest-links/<id>` topic, or null. */
  guestLinkOf(topic: string): string | null {
    const head = `${this.prefix}/guest-links/`;
    if (!topic.startsWith(head)) return null;
    const id = topic.slice(head.length);
    return id === '' || id.includes('/') ? null : id;
  }
}

/** The topics of one agent: the door topics plus its availability and sync trigger. */
export class Topics extends DoorTopics {
  constructor(
    prefix: string,
    readonly agentId: string,
  ) {
    super(prefix);
  }

  get status(): string {
    return `${this.prefix}/agents/${this.agentId}/status`;
  }
  get sync(): string {
    return `${this.prefix}/agents/${this.agentId}/sync`;
  }
  /** Retained lockdown of every door of this agent (in). */
  get agentLockdown(): string {
    return `${this.prefix}/agents/${this.agentId}/lockdown`;
  }
  /** Retained `{"lockdown":bool,"by","reason","since"}`: the agent-wide lockdown as the agent holds it (out). */
  get agentLockdownState(): string {
    return `${this.prefix}/agents/${this.agentId}/lockdown/state`;
  }
  /** Retained JSON: the agent's health (protocol/health.ts), every minute and on a change (out). */
  get health(): string {
    return `${this.prefix}/agents/${this.agentId}/health`;
  }
  /** Retained muster list of one of the agent's areas (out): protocol/areas.ts. */
  areaOccupancy(area: string): string {
    return `${this.prefix}/agents/${this.agentId}/areas/${area}/occupancy`;
  }
  /** `{"area":...}`: reset an area's anti-passback and occupancy, or every area's (in, not retained). */
  get areasReset(): string {
    return `${this.prefix}/agents/${this.agentId}/areas/reset`;
  }
  /** The service's request to send audit events again (in): protocol/auditResend.ts. */
  get auditResend(): string {
    return this.auditResendOf(this.agentId);
  }
  /** The reply to a reset without an MQTT 5 response topic (out). */
  get areasReply(): string {
    return `${this.prefix}/agents/${this.agentId}/areas/reply`;
  }
  /** `{"event_type":...}` for one of Home Assistant's event entities: a door's (`door` given) or the agent's (out). */
  homeAssistantEvents(entity: string, door: string | null): string {
    return door === null ? `${this.prefix}/agents/${this.agentId}/ha/${entity}` : `${this.prefix}/doors/${door}/ha/${entity}`;
  }
}
