import type { Command } from './context.js';

/**
 * Every command, one line each: its words (as commands/usage.ts names them) and its module, imported only when
 * it runs. `relock` (what systemd runs after a crash) and `status` load neither the MQTT client nor fastify;
 * `--version` and `--help` load no command at all. A new command is its usage in usage.ts, a module exporting
 * `command`, and one line here.
 */
export const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  demo: async () => (await import('./demo.js')).command,
  run: async () => (await import('./run.js')).command,
  status: async () => (await import('./status.js')).command,
  events: async () => (await import('./events.js')).command,
  'audit verify': async () => (await import('./auditVerify.js')).command,
  check: async () => (await import('./check.js')).command,
  import: async () => (await import('./import.js')).command,
  sync: async () => (await import('./sync.js')).command,
  relock: async () => (await import('./relock.js')).command,
  unlock: async () => (await import('./unlock.js')).command,
  lock: async () => (await import('./lock.js')).command,
  'learn-card': async () => (await import('./learnCard.js')).command,
  'reader keyset': async () => (await import('./readerKeyset.js')).command,
  'reader osdp set-address': async () => (await import('./readerComset.js')).setAddressCommand,
  'reader osdp set-baud': async () => (await import('./readerComset.js')).setBaudCommand,
  'reader learn': async () => (await import('./readerLearn.js')).command,
  'reader firmware': async () => (await import('./readerFirmware.js')).command,
  'config check': async () => (await import('./configCheck.js')).command,
  'release sign': async () => (await import('./release.js')).signCommand,
  'release verify': async () => (await import('./release.js')).verifyCommand,
  'update apply': async () => (await import('./updateApply.js')).command,
  service: async () => (await import('./service.js')).command,
  'service key create': async () => (await import('./service.js')).keyCreateCommand,
  'service outbox': async () => (await import('./service.js')).outboxCommand,
  'service identity release': async () => (await import('./serviceIdentity.js')).releaseCommand,
  'service migrate': async () => (await import('./serviceMigrate.js')).command,
  'service enrol-code': async () => (await import('./serviceFleet.js')).enrolCodeCommand,
  'service audit verify': async () => (await import('./serviceAuditVerify.js')).command,
  'service fleet-keys': async () => (await import('./serviceFleet.js')).fleetKeysCommand,
  'service release add': async () => (await import('./serviceRelease.js')).releaseAddCommand,
  enrol: async () => (await import('./enrol.js')).command,
};
