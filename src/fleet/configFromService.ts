import type { Logger } from 'pino';
import type { FleetReport } from '../api/fleet.js';
import { keepAppliedConfig, type KeptConfig } from './appliedConfig.js';
import type { FleetExchange } from './fleetClient.js';
import type { ExchangeHandler } from './fleetComponent.js';
import type { FleetReporter } from './fleetReporter.js';
import { appliesLive, differences, pathText } from './liveChanges.js';

/** The configuration part of a report: the version applied, the last one refused with its problems, and how. */
export type ConfigReport = NonNullable<FleetReport['config']>;

/** A version checked: the configuration it makes with the board file, or its problems (config/fleetVersions.ts). */
export type CheckedVersion<C> = { config: C } | { problems: string[] };

/** What a report may carry of a refusal's problems (api/fleet.ts). */
const MAX_PROBLEMS = 200;
const MAX_PROBLEM_CHARS = 2000;

/** Problems as a report carries them: at most MAX_PROBLEMS, each cut to MAX_PROBLEM_CHARS. */
export function reportedProblems(problems: readonly string[]): string[] {
  return problems.slice(0, MAX_PROBLEMS).map((p) => (p.length > MAX_PROBLEM_CHARS ? `${p.slice(0, MAX_PROBLEM_CHARS - 3)}...` : p));
}

/**
 * The agent's configuration from the service (docs/fleet.md, "Configuration from the service"). A newer version
 * offered is checked (its signature, then merged with the board file exactly as `config check` checks a file):
 * one that fails is refused and reported with its problems, and the running one is kept. One that passes is kept
 * in `<dataDir>/fleet/` (the running one as previous.json), then applied: live when every difference is one the
 * agent takes while it runs (liveChanges.ts), otherwise by a restart under the fail-secure start (reported first).
 * `C` is the agent's configuration as the program uses it (AgentOptions).
 */
export class ConfigFromService<C> implements ExchangeHandler {
  readonly name = 'configuration';
  private kept: KeptConfig | null;
  private readonly state: ConfigReport;
  /** The last version refused (its number and SHA-256): offered again, it is not checked nor reported again. */
  private refused: { version: number; sha256: string } | null = null;
  private restarting = false;

  constructor(
    private readonly deps: {
      dataDir: string;
      /** The configuration running: compared with each new version (a live change updates it in place). */
      running: C;
      /** The version running as kept (null: the board file alone). */
      kept: KeptConfig | null;
      /** What the start reports: the version it applied, one it passed over (refused), how. */
      atStart: ConfigReport;
      check: (version: KeptConfig) => CheckedVersion<C>;
      /** Applies a version whose every difference is live (the doors' options, the log level). */
      applyLive: (next: C) => void;
      /** Stops the agent as on SIGTERM, to start again on the version kept (systemd's Restart=always). */
      restart: (why: string) => void;
      reporter: FleetReporter;
      logger: Logger;
    },
  ) {
    this.kept = deps.kept;
    this.state = Object.assign({}, deps.atStart);
    // The first report after start: the version the agent runs, and how it came to run it.
    deps.reporter.set({ config: Object.assign({}, this.state) });
  }

  /** The version held (null: none from the service). */
  heldVersion(): number | null {
    return this.kept?.version ?? null;
  }

  async handle(exchange: FleetExchange): Promise<void> {
    const offered = exchange.config;
    if (offered === null || this.restarting) return;
    const { logger } = this.deps;
    const held = this.kept?.version ?? 0;
    if (offered.version <= held) {
      logger.warn({ offered: offered.version, held }, 'fleet: the service offers a configuration version not newer than the one held: not taken');
      return;
    }
    if (this.refused?.version === offered.version && this.refused.sha256 === offered.sha256) return;
    const checked = this.deps.check(offered);
    if ('problems' in checked) {
      this.refused = { version: offered.version, sha256: offered.sha256 };
      const problems = reportedProblems(checked.problems);
      this.report({ refused: { version: offered.version, problems } });
      logger.warn(
        { version: offered.version, problems },
        `configuration version ${offered.version} refused: it fails its check; version ${held || 'none'} is kept`,
      );
      return;
    }
    const changes = differences(this.deps.running, checked.config);
    keepAppliedConfig(this.deps.dataDir, offered, this.kept);
    this.kept = offered;
    this.refused = null;
    if (changes.every(appliesLive)) {
      this.deps.applyLive(checked.config);
      this.report({ applied: offered.version, refused: null, how: 'live' });
      logger.info({ version: offered.version, changes: changes.map(pathText) }, `configuration version ${offered.version} applied live`);
      return;
    }
    this.restarting = true;
    this.report({ applied: offered.version, refused: null, how: 'restart' });
    logger.info(
      {
        version: offered.version,
        changes: changes
          .filter((c) => !appliesLive(c))
          .map(pathText)
          .slice(0, 20),
      },
      `configuration version ${offered.version} needs a restart: it changes more than what changes live`,
    );
    // Told before the agent stops (a report that cannot go now goes with the first one after the start).
    await this.deps.reporter
      .flush()
      .catch((err: unknown) => logger.warn({ err: { message: (err as Error).message } }, 'fleet: cannot report before the restart'));
    this.deps.restart(`stopping to apply configuration version ${offered.version}`);
  }

  private report(change: Partial<ConfigReport>): void {
    Object.assign(this.state, change);
    this.deps.reporter.set({ config: Object.assign({}, this.state) });
  }
}
