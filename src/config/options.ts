import type { AccessOptions, AreaOptions, DoorOptions, EmergencyOptions, InterlockOptions, PowerOptions } from '../door/options.js';
import type { FleetOptions } from '../fleet/options.js';
import type { GpioOptions } from '../hardware/gpio.js';
import type { MetricsOptions } from '../metrics/options.js';
import type { MqttOptions, SyslogOptions } from '../protocol/options.js';
import type { ServerOptions } from '../service/options.js';
import type { SyncServiceOptions } from '../sync/options.js';

/** The agent's own settings (the `agent` section). */
export interface AgentSettings {
  id: string;
  dataDir: string;
  timezone: string;
  maxEvents: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  logFormat: 'auto' | 'pretty' | 'json' | 'journal';
  rtc: boolean;
  /** The control socket's path (docs/local-control.md); null: none. */
  controlSocket: string | null;
}

/**
 * The agent's configuration as the program uses it: parsed, validated and normalized once, at the edge
 * (config/load.ts), into the option objects each component takes. Nothing outside config/ and the
 * composition roots knows the file format.
 */
export interface AgentOptions {
  agent: AgentSettings;
  access: AccessOptions;
  gpio: GpioOptions;
  doors: DoorOptions[];
  /** The fire alarm input; the doors it releases carry `emergencyRelease`. */
  emergency?: EmergencyOptions;
  /** Doors that work together (docs/areas.md): doors as lower-case uuids; absent or empty: none. */
  areas?: AreaOptions[];
  interlocks?: InterlockOptions[];
  mqtt?: MqttOptions;
  service?: SyncServiceOptions;
  /** The agent's power inputs (mains present, battery low). */
  power?: PowerOptions;
  metrics?: MetricsOptions;
  /** The fleet (docs/fleet.md): the agent takes its configuration from the service; absent: the file alone. */
  fleet?: FleetOptions;
  /** Every audit event sent to a SIEM as syslog (docs/audit.md); absent: none. */
  syslog?: SyslogOptions;
}

/** The reference service's configuration (its `server` section and the shared `mqtt` section). */
export interface ServiceOptions {
  server: ServerOptions;
  mqtt?: MqttOptions;
}
