import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import type { Timers } from '../util/clock.js';
import type { FleetClient, FleetExchange } from './fleetClient.js';
import { FleetError } from './fleetClient.js';
import type { FleetReporter } from './fleetReporter.js';
import { FleetSchedule } from './fleetSchedule.js';

/**
 * One part of the service's exchange and what the agent does with it (docs/fleet.md): its configuration
 * (configFromService.ts), an update offered, reader firmware tasks. Each reports what it did through the reporter.
 */
export interface ExchangeHandler {
  readonly name: string;
  handle(exchange: FleetExchange): Promise<void>;
}

/**
 * The agent in the fleet (docs/fleet.md): every fleet.pollSeconds it sends what it has to report, asks the
 * service what it has for it (GET /fleet/self with the configuration version it holds), and hands the answer to
 * each handler in turn. While the service cannot be reached, nothing changes on the board.
 */
export class FleetComponent implements Component {
  readonly name = 'fleet';
  private readonly schedule: FleetSchedule;

  constructor(
    private readonly deps: {
      client: FleetClient;
      reporter: FleetReporter;
      handlers: readonly ExchangeHandler[];
      agentId: string;
      /** The configuration version the agent holds (null: none from the service). */
      heldVersion: () => number | null;
      pollSeconds: number;
      timers: Timers;
      logger: Logger;
      random?: () => number;
    },
  ) {
    this.schedule = new FleetSchedule({
      run: () => this.exchangeOnce(),
      intervalMs: deps.pollSeconds * 1000,
      timers: deps.timers,
      logger: deps.logger,
      ...(deps.random ? { random: deps.random } : {}),
    });
  }

  start(): void {
    this.schedule.start();
  }

  stop(): Promise<void> {
    return this.schedule.stop();
  }

  private async exchangeOnce(): Promise<void> {
    const { client, reporter, handlers, logger } = this.deps;
    await reporter.flush();
    const exchange = await client.exchange(this.deps.heldVersion());
    if (exchange.agent_id !== this.deps.agentId) {
      throw new FleetError(
        `GET /fleet/self answered for agent ${exchange.agent_id}, not this one (agent.id ${this.deps.agentId}): service.apiKeyFile holds another agent's key`,
        200,
        null,
      );
    }
    for (const handler of handlers) {
      try {
        await handler.handle(exchange);
      } catch (err) {
        logger.error({ err, part: handler.name }, `fleet: cannot handle the service's ${handler.name}`);
      }
    }
    await reporter.flush();
  }
}
