import { randomBytes } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import * as z from 'zod';
import { clientOptions, connectWithBackoff } from '../../protocol/connection.js';
import type { MqttOptions } from '../../protocol/options.js';
import type { Env } from '../../util/secretFiles.js';
import type { AgentLogins } from './fleetDeps.js';

/** mosquitto's dynamic security plugin: its commands go here, its answers come back on RESPONSE_TOPIC. */
const CONTROL_TOPIC = '$CONTROL/dynamic-security/v1';
const RESPONSE_TOPIC = `${CONTROL_TOPIC}/response`;
/** How long the plugin has to answer a command. */
const ANSWER_MS = 10_000;
/** The text name of every login this service makes: one without it is not the fleet's, and is never changed. */
const TEXT_NAME = 'door-agent fleet agent';

/** The plugin's answers (validated: a network payload), matched to the commands by their correlation data. */
const responsesSchema = z.object({
  responses: z.array(
    z.looseObject({
      command: z.string(),
      error: z.string().optional(),
      correlationData: z.string().optional(),
      data: z.unknown().optional(),
    }),
  ),
});
type Response = z.infer<typeof responsesSchema>['responses'][number];
const clientSchema = z.object({
  client: z.object({ username: z.string(), textname: z.string().optional(), roles: z.array(z.object({ rolename: z.string() })).default([]) }),
});

/** A login that could not be made or changed: the reason, for the 503 that answers the agent's poll. */
export class AgentLoginFailed extends Error {}

/**
 * The agents' MQTT logins (server.fleet.agentMqtt; docs/fleet.md, "MQTT logins"), made in mosquitto's dynamic
 * security plugin over a connection with the service's own mqtt settings: a client per agent (its agent id), with
 * the role the configuration names, and a fresh password each time a grant is handed out (the one before revoked).
 */
export class AgentMqttLogins implements AgentLogins {
  private readonly client: MqttClient;
  private readonly waiting = new Map<string, (response: Response) => void>();
  /** Subscribed to the plugin's answers on the current connection (a command sent before would miss its answer). */
  private subscribed = false;

  constructor(
    mqtt: MqttOptions,
    private readonly role: string,
    env: Env,
    private readonly logger: Logger,
  ) {
    const options = clientOptions(mqtt, env, { clientId: `door-agent-service-fleet-${randomBytes(4).toString('hex')}` });
    this.client = connectWithBackoff(mqtt.url, options, logger);
    this.client.on('connect', () => {
      this.client
        .subscribeAsync(RESPONSE_TOPIC, { qos: 1 })
        .then(() => {
          this.subscribed = true;
        })
        .catch((err: unknown) => this.logger.warn({ err }, 'cannot subscribe to the dynamic security answers'));
    });
    this.client.on('close', () => {
      this.subscribed = false;
    });
    this.client.on('message', (topic, payload) => {
      if (topic !== RESPONSE_TOPIC) return;
      let parsed: z.infer<typeof responsesSchema>;
      try {
        parsed = responsesSchema.parse(JSON.parse(payload.toString('utf8')));
      } catch {
        return; // not an answer of the plugin's form: no command of ours is answered by it
      }
      for (const response of parsed.responses) {
        if (response.correlationData !== undefined) this.waiting.get(response.correlationData)?.(response);
      }
    });
  }

  /**
   * Gives `username` the password `password` and the role: a new client, or the fleet's client of that name
   * again. Throws AgentLoginFailed with the reason when the broker is not connected, does not answer, refuses, or
   * already has a client of that name that this service did not make (never changed).
   */
  async setLogin(username: string, password: string): Promise<void> {
    const created = await this.command({
      command: 'createClient',
      username,
      password,
      textname: `${TEXT_NAME} ${username}`,
      roles: [{ rolename: this.role }],
    });
    if (created.error === undefined) return;
    if (created.error !== 'Client already exists') throw this.refused('createClient', username, created.error);
    const got = await this.command({ command: 'getClient', username });
    if (got.error !== undefined) throw this.refused('getClient', username, got.error);
    const parsed = clientSchema.safeParse(got.data);
    if (!parsed.success) throw new AgentLoginFailed(`the broker's answer to getClient ${username} is not in the plugin's form`);
    const { client } = parsed.data;
    if (!client.textname?.startsWith(TEXT_NAME)) {
      throw new AgentLoginFailed(
        `the broker already has a client named ${username} that this service did not make: it is left alone; adopt the agent under another id, or remove that client`,
      );
    }
    const reset = await this.command({ command: 'setClientPassword', username, password });
    if (reset.error !== undefined) throw this.refused('setClientPassword', username, reset.error);
    if (!client.roles.some((r) => r.rolename === this.role)) {
      const added = await this.command({ command: 'addClientRole', username, rolename: this.role });
      if (added.error !== undefined) throw this.refused('addClientRole', username, added.error);
    }
  }

  async close(): Promise<void> {
    await this.client.endAsync().catch(() => undefined);
  }

  private refused(command: string, username: string, error: string): AgentLoginFailed {
    const hint = error === 'Role not found' ? ` (make the role first: mosquitto_ctrl dynsec createRole ${this.role})` : '';
    return new AgentLoginFailed(`the broker refused ${command} for ${username}: ${error}${hint}`);
  }

  /** One command to the plugin, answered (its error, if any, in the answer) or rejected with AgentLoginFailed. */
  private async command(body: Record<string, unknown> & { command: string }): Promise<Response> {
    if (!this.client.connected || !this.subscribed)
      throw new AgentLoginFailed('the MQTT broker is not connected: no agent login can be made now (the agent asks again)');
    const correlation = randomBytes(12).toString('hex');
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<Response>((resolve, reject) => {
      timer = setTimeout(() => {
        reject(
          new AgentLoginFailed(
            `the broker did not answer ${body.command} within ${ANSWER_MS / 1000} s: is mosquitto's dynamic security plugin loaded, and may the service's MQTT user use ${CONTROL_TOPIC}?`,
          ),
        );
      }, ANSWER_MS);
      this.waiting.set(correlation, resolve);
    });
    try {
      await this.client.publishAsync(CONTROL_TOPIC, JSON.stringify({ commands: [Object.assign({}, body, { correlationData: correlation })] }), { qos: 1 });
      return await answered;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(correlation);
    }
  }
}
