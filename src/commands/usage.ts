/**
 * The one table of command usages: the top-level help, each command's --help and the usage line of a usage error
 * are all made from it, so they cannot drift apart. cli.ts parses with the options listed here.
 */

export interface OptionUsage {
  /** As typed: `--door UUID`. */
  flag: string;
  /** One line: what it does. */
  meaning: string;
}

export interface CommandUsage {
  /** The words that name the command: `service key create`. */
  name: string;
  /** What follows the name in the synopsis: positionals and options. */
  args: string;
  /** One line for the top-level help. */
  summary: string;
  /** More lines for `--help` (optional). */
  details?: string[];
  options: OptionUsage[];
  /** Reads the configuration (--config, $DOOR_AGENT_CONFIG, /etc/door-agent/config.yaml). */
  config: boolean;
  /** The exit codes this command can end with, besides 2 (usage), which every command has. */
  exits: Array<[code: number, meaning: string]>;
}

const CONFIG_OPTION: OptionUsage = { flag: '--config F', meaning: 'the configuration file (see "Config" below)' };
const INVALID_CONFIG: [number, string] = [78, 'the configuration is missing or invalid'];
/** The daemons' log (docs/logging.md): over agent.logLevel and agent.logFormat. */
const LOG_OPTIONS: OptionUsage[] = [
  { flag: '--log-level L', meaning: 'fatal, error, warn, info, debug or trace (over agent.logLevel)' },
  { flag: '--log-format F', meaning: 'auto, pretty, json or journal (over agent.logFormat; auto: journal under systemd, pretty at a terminal)' },
];

const COMMANDS: readonly CommandUsage[] = [
  {
    name: 'demo',
    args: '[--dir D]',
    summary: 'everything on this machine: broker, reference service, a door on simulated GPIO; type cards (npm start)',
    options: [{ flag: '--dir D', meaning: 'where the demo keeps its files (default demo-data, or $DOOR_AGENT_DEMO_DIR)' }],
    config: false,
    exits: [
      [0, 'stopped by Ctrl-C'],
      [1, "the demo could not start, or D holds files that are not the demo's, or a running demo uses D"],
    ],
  },
  {
    name: 'run',
    args: '[--log-level L] [--log-format F] [--config F]',
    summary: 'the daemon: relays locked first, then the cache, inputs and readers; SIGTERM locks and stops',
    options: LOG_OPTIONS,
    config: true,
    exits: [[0, 'stopped by SIGTERM or SIGINT (every door locked)'], [1, 'a fatal error (every relay driven locked first)'], INVALID_CONFIG],
  },
  {
    name: 'status',
    args: '[--json] [--config F]',
    summary: 'door states, relock deadlines, readers, cache counts, event log, clock trust',
    options: [{ flag: '--json', meaning: 'one JSON object instead of text' }],
    config: true,
    exits: [
      [0, 'the status was printed (also when the daemon is not running)'],
      [1, 'no cache yet (the agent never ran, synced or imported), a damaged one (every page checked), or the cache cannot be read'],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'events',
    args: '[--since SEQ] [--follow] [--config F]',
    summary: 'the local audit log as JSON lines',
    options: [
      { flag: '--since SEQ', meaning: 'only the events after sequence number SEQ' },
      { flag: '--follow', meaning: 'keep printing new events until Ctrl-C' },
    ],
    config: true,
    exits: [[0, 'ok'], [1, 'the log cannot be read'], INVALID_CONFIG],
  },
  {
    name: 'check',
    args: 'CREDENTIAL [--kind card|pin|token] [--door DOOR] [--at TIME] [--format NAME] [--config F]',
    summary: 'the offline decision from the cache, as JSON, with each access level considered; exit 0 granted, 1 denied',
    options: [
      { flag: 'CREDENTIAL', meaning: 'a card number, a PIN or a guest-link token' },
      { flag: '--kind card|pin|token', meaning: 'what CREDENTIAL is (default card)' },
      { flag: '--door DOOR', meaning: 'the door to decide for, by uuid, name or resourceId (needed when more than one door is configured)' },
      { flag: '--at TIME', meaning: 'decide as at this time: "2026-12-24 19:00" in agent.timezone, or an ISO 8601 instant (default now)' },
      {
        flag: '--format NAME',
        meaning: "a card given as printed (123:45678): the card's Wiegand format (H10301, C1k35, ...), one of those the door's reader takes",
      },
    ],
    config: true,
    exits: [[0, 'granted'], [1, 'denied (or the cache cannot be read)'], INVALID_CONFIG],
  },
  {
    name: 'import',
    args: 'FILE [--allow-mass-removal] [--json] [--config F]',
    summary: 'load a snapshot file into the cache, atomically (offline provisioning)',
    options: [
      { flag: 'FILE', meaning: 'the snapshot file (JSON)' },
      { flag: '--allow-mass-removal', meaning: 'accept a snapshot that removes more than service.maxRemovalRatio of the users' },
      { flag: '--json', meaning: 'print the summary as JSON' },
    ],
    config: true,
    exits: [[0, 'imported'], [1, 'refused: the cache is unchanged'], INVALID_CONFIG],
  },
  {
    name: 'sync',
    args: '[--allow-mass-removal] [--config F]',
    summary: 'one sync from the access-control service, with a summary',
    options: [{ flag: '--allow-mass-removal', meaning: 'accept an answer that removes more than service.maxRemovalRatio of the users' }],
    config: true,
    exits: [[0, 'synced'], [1, 'failed or refused (the error names the URL and the cause): the cache is unchanged'], INVALID_CONFIG],
  },
  {
    name: 'audit verify',
    args: '[--offline] [--json] [--config F]',
    summary: "checks the audit log's hash chain, and the service's copy of it (docs/audit.md)",
    details: [
      'Names the first bad record: edited, deleted, inserted, reordered, restarted, or differs (not as the service received it).',
      'Records evicted past agent.maxEvents are not findings, as many as the log counted; a service that cannot be reached is a warning.',
    ],
    options: [
      { flag: '--offline', meaning: "the local log only: not compared with the service's copy" },
      { flag: '--json', meaning: 'one JSON object: intact, summary, findings, warnings' },
    ],
    config: true,
    exits: [
      [0, 'intact'],
      [1, 'a finding (each printed, the first bad record first)'],
      [78, 'no audit log (state.db) yet, or the configuration is missing or invalid'],
    ],
  },
  {
    name: 'relock',
    args: '[--config F]',
    summary: 'drive every configured relay to its locked level and exit',
    details: ['Works on a configuration that does not validate: every relay whose pin can be read is locked.'],
    options: [],
    config: true,
    exits: [
      [0, 'every relay locked'],
      [1, 'a relay could not be driven'],
      [78, 'the configuration is invalid (the relays it names were still locked)'],
    ],
  },
  {
    name: 'unlock',
    args: '--door DOOR [--seconds N] [--config F]',
    summary: "unlock a door through the running daemon's control socket; it relocks at the deadline",
    details: [
      'The rules of a remote unlock apply: refused in a lockdown, or while another door of its interlock is unlocked or open.',
      "Audited with origin local and your user name (docs/local-control.md). The socket is for root and the daemon's group.",
    ],
    options: [
      { flag: '--door DOOR', meaning: "the door's name or uuid, in any case" },
      { flag: '--seconds N', meaning: "how long it stays unlocked (default the door's unlockSeconds; capped by its maxUnlockSeconds)" },
    ],
    config: true,
    exits: [
      [0, 'unlocked'],
      [1, 'refused (lockdown, interlock, an unknown door: the message says why)'],
      [69, 'the daemon is not running (no control socket)'],
      [77, 'permission denied on the control socket (the message names the group)'],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'lock',
    args: '--door DOOR [--config F]',
    summary: "lock a door now through the running daemon's control socket",
    details: ['Refused while the emergency input (fire alarm) releases the door. Audited with origin local and your user name.'],
    options: [{ flag: '--door DOOR', meaning: "the door's name or uuid, in any case" }],
    config: true,
    exits: [
      [0, 'locked'],
      [1, 'refused (the emergency input, an unknown door: the message says why)'],
      [69, 'the daemon is not running (no control socket)'],
      [77, 'permission denied on the control socket (the message names the group)'],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'learn-card',
    args: '[--reader R] [--seconds S] [--config F]',
    summary: 'show the next card a reader reads in every numbering, through the running daemon (enrolment)',
    details: [
      'While it waits, taps at that reader are shown here and not decided; the other readers decide as ever.',
      'Full card numbers are printed (for enrolment, at the device); the audit log keeps a hint.',
    ],
    options: [
      { flag: '--reader R', meaning: 'a door name or uuid (its entry reader), DOOR:exit for its exit reader; needed with more than one reader' },
      { flag: '--seconds S', meaning: 'how long to wait for a card (default 60, at most 3600)' },
    ],
    config: true,
    exits: [
      [0, 'a card was read and shown'],
      [1, 'no card within the time, or refused (an unknown reader, one already in a learn session)'],
      [69, 'the daemon is not running (no control socket)'],
      [77, 'permission denied on the control socket (the message names the group)'],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'reader keyset',
    args: '[--door UUID] [--reader entry|exit] [--config F]',
    summary: 'give an OSDP reader a new secure channel key (saved to its scbkFile first); door-agent must be stopped',
    options: [
      { flag: '--door UUID', meaning: 'the door whose reader gets the key (needed with more than one such door)' },
      { flag: '--reader entry|exit', meaning: "which of the door's readers (default entry; exit: its readers.exit)" },
    ],
    config: true,
    exits: [[0, 'the reader took the new key'], [1, 'failed (the old key still works)'], INVALID_CONFIG],
  },
  {
    name: 'reader osdp set-address',
    args: '--to N [--door UUID] [--reader entry|exit] [--config F]',
    summary: 'move an OSDP reader to another address (osdp_COMSET); prints the config line to change; door-agent must be stopped',
    details: [
      'Refused before anything is sent: an address out of 0-126 (127 is broadcast), or one another reader on the same bus has.',
      'The reader must confirm the new address (osdp_COM) and answer there; the configuration file is not rewritten.',
    ],
    options: [
      { flag: '--to N', meaning: 'the new address, 0-126' },
      { flag: '--door UUID', meaning: 'the door whose reader moves (needed with more than one OSDP door)' },
      { flag: '--reader entry|exit', meaning: "which of the door's readers (default entry; exit: its readers.exit)" },
    ],
    config: true,
    exits: [[0, 'the reader answers at the new address'], [1, 'failed (the message says where the reader answers)'], INVALID_CONFIG],
  },
  {
    name: 'reader osdp set-baud',
    args: '--to RATE [--door UUID] [--reader entry|exit] [--config F]',
    summary: 'move an OSDP reader to another baud rate (osdp_COMSET); prints the config line to change; door-agent must be stopped',
    details: ['RATE: 9600, 19200, 38400, 57600, 115200 or 230400. Every reader on one bus runs at one rate: move each.'],
    options: [
      { flag: '--to RATE', meaning: 'the new baud rate' },
      { flag: '--door UUID', meaning: 'the door whose reader moves (needed with more than one OSDP door)' },
      { flag: '--reader entry|exit', meaning: "which of the door's readers (default entry; exit: its readers.exit)" },
    ],
    config: true,
    exits: [[0, 'the reader answers at the new rate'], [1, 'failed (the message says where the reader answers)'], INVALID_CONFIG],
  },
  {
    name: 'reader learn',
    args: '[--door UUID] [--reader entry|exit] [--timeout S] [--config F]',
    summary: 'show the cards a reader reads in every numbering (format, facility, card, data, facility_card, printed, raw bits)',
    details: [
      'While the daemon runs: through its control socket, every card until the timeout or Ctrl-C; taps at that reader are shown, not decided.',
      'Without the daemon: the reader is opened here and the first card shown.',
      'Wiegand, OSDP (over its secure channel when it has a key), serial and keyboard readers. Full card numbers are printed (for enrolment, at the device); nothing is logged.',
    ],
    options: [
      { flag: '--door UUID', meaning: 'the door whose reader to read (needed with more than one door with a reader)' },
      { flag: '--reader entry|exit', meaning: "which of the door's readers (default entry)" },
      { flag: '--timeout S', meaning: 'how long to wait for a card (default 60 s; through the daemon at most 3600)' },
    ],
    config: true,
    exits: [
      [0, 'a card was read and shown'],
      [1, 'no card within the timeout, or the reader could not be opened or did not answer'],
      [69, 'the daemon runs but does not answer on its control socket (its log says why)'],
      [77, "permission denied on the daemon's control socket (the message names the group)"],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'reader firmware',
    args: 'FILE --reader NAME [--door NAME] [--expect-version V] [--config F]',
    summary: 'send an OSDP reader a new firmware (osdp_FILETRANSFER) through the running daemon, and confirm it runs it',
    details: [
      'The daemon sends the file at the pace the reader asks for; meanwhile that reader is busy (shown offline, no taps), the door stays locked and its other readers decide as ever.',
      'Confirmed when the reader comes back naming another firmware (or V) in osdp_PDID. One reader at a time: a second request while one runs is refused.',
    ],
    options: [
      { flag: 'FILE', meaning: "the reader's firmware file, as its maker ships it" },
      { flag: '--reader NAME', meaning: 'a door name or uuid (its entry reader), DOOR:exit for its exit reader; with --door: entry or exit' },
      { flag: '--door NAME', meaning: "the reader's door (then --reader entry|exit, default entry)" },
      { flag: '--expect-version V', meaning: 'the firmware the reader must name afterwards, such as 3.5.0 (default: any other than before)' },
    ],
    config: true,
    exits: [
      [0, 'the reader came back with the new firmware'],
      [1, 'refused (an unknown or non-OSDP reader, a transfer already running) or failed (the reason; the reader keeps its old firmware)'],
      [69, 'the daemon is not running (no control socket)'],
      [77, 'permission denied on the control socket (the message names the group)'],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'config check',
    args: '[--config F]',
    summary: 'validate the configuration; print every problem with its key path',
    details: [
      'Errors: the schema, the checks across keys, unreadable secret files, a data directory door-agent cannot write.',
      'Warnings (exit 0): a reader device that is absent (not plugged in yet), a GPIO driver this machine lacks.',
      'What it accepts, `door-agent run` accepts at start, and the other way round.',
    ],
    options: [],
    config: true,
    exits: [
      [0, 'valid (warnings may be printed)'],
      [78, 'invalid: every problem listed on stderr'],
    ],
  },
  {
    name: 'enrol',
    args: '[URL CODE] [--data-dir D] [--wait-minutes N] [--config F]',
    summary: "join a service's fleet: send the code, wait to be adopted, write the configuration and secrets (docs/fleet.md)",
    details: [
      'The command is printed by door-agent service enrol-code or the console. --config is where the configuration is written:',
      'it must not exist (nothing is sent otherwise). Stopped while waiting, run it again without URL CODE to resume.',
    ],
    options: [
      { flag: '[URL]', meaning: "the service's address, as the printed command gives it" },
      { flag: '[CODE]', meaning: 'the enrolment code, da1.<secret>.<fingerprint>' },
      { flag: '--data-dir D', meaning: "the agent's data directory (default /var/lib/door-agent): agent.dataDir, and the pending enrolment" },
      { flag: '--wait-minutes N', meaning: 'how long to wait for an operator to adopt this board (default 30)' },
    ],
    config: true,
    exits: [
      [0, 'enrolled: the configuration and its secrets are written'],
      [1, 'refused or failed: a used, expired, unknown or forged code, refused by the operator, a configuration already there; nothing written'],
    ],
  },
  {
    name: 'release sign',
    args: '--key FILE BUNDLE',
    summary: "sign a release bundle (npm run release) with the release key's private half: writes BUNDLE.sig.json",
    details: ['The manifest signed: the version and architecture of its RELEASE.json, the SHA-256 and size of the file (docs/fleet.md).'],
    options: [
      { flag: 'BUNDLE', meaning: 'dist-release/door-agent-<version>-<arch>.tar.gz' },
      { flag: '--key FILE', meaning: "the release key's private half (Ed25519, PKCS#8 PEM)" },
    ],
    config: false,
    exits: [
      [0, 'signed'],
      [1, 'the key or the bundle cannot be read, or the bundle is not one'],
    ],
  },
  {
    name: 'release verify',
    args: '--key FILE [--signature FILE] BUNDLE',
    summary: 'check a bundle as a board does before installing it: the signature, size, SHA-256 and RELEASE.json',
    options: [
      { flag: 'BUNDLE', meaning: 'the bundle' },
      { flag: '--key FILE', meaning: "the release key's public half (Ed25519, SPKI PEM)" },
      { flag: '--signature FILE', meaning: 'its signature file (default BUNDLE.sig.json)' },
    ],
    config: false,
    exits: [
      [0, 'good'],
      [1, 'refused: the reason on stderr'],
    ],
  },
  {
    name: 'update apply',
    args: '[--signature FILE] [--release-key FILE] [--allow-downgrade] [--health-seconds N] [--rollout ID] [--root DIR] [--run-config F] [--config F] BUNDLE | --request FILE',
    summary: 'install a signed release bundle beside the running version, switch to it, and switch back by itself unless it is healthy',
    details: [
      'Checked before anything is replaced: the signature by the release key, the size and SHA-256, the architecture, a newer version.',
      'Healthy: every relay driven as its lock state says, the readers open, the service and broker reached if they were before.',
      'Run as root, outside door-agent.service (it stops and starts it). Every step is kept in <dataDir>/fleet/update-result.json.',
      'Updates what scripts/install.sh installed (/opt/door-agent), else the Debian package: with dpkg, from the package in the bundle.',
    ],
    options: [
      // Optional to the parser: the unit gives --request FILE instead (the command says which it needs).
      { flag: '[BUNDLE]', meaning: 'door-agent-<version>-<arch>.tar.gz' },
      { flag: '--signature FILE', meaning: 'its signature file (default BUNDLE.sig.json)' },
      { flag: '--release-key FILE', meaning: 'the release public key (default fleet.releasePublicKeyFile of the configuration)' },
      { flag: '--allow-downgrade', meaning: 'take a version that is not newer than the installed one' },
      { flag: '--health-seconds N', meaning: `how long the new version has to report healthy (10-3600, default 120)` },
      { flag: '--rollout ID', meaning: 'the rollout that offered it, recorded for the report to the service' },
      { flag: '--root DIR', meaning: 'a test root (scripts/install.sh --root; / in a chroot with the package): no systemd, the daemon run as a child' },
      { flag: '--run-config F', meaning: 'with --root: the configuration the daemon runs with (default --config)' },
      {
        flag: '--request FILE',
        meaning: "instead of BUNDLE: the daemon's <dataDir>/fleet/update-request.json (the bundle, its signature, the rollout, its bound); removed when done",
      },
    ],
    config: true,
    exits: [
      [0, 'installed and healthy'],
      [1, 'refused (nothing replaced), rolled back (the previous version runs again) or failed: the reason on stderr'],
      INVALID_CONFIG,
    ],
  },
  {
    name: 'service',
    args: '[--log-level L] [--log-format F] [--config F]',
    summary: "the reference access-control service (HTTP API), from the file's server section",
    options: LOG_OPTIONS,
    config: true,
    exits: [[0, 'stopped by SIGTERM or SIGINT'], [1, 'could not start'], INVALID_CONFIG],
  },
  {
    name: 'service key create',
    args: '--rank REGULAR|ADMIN|SUPER|DOOR [--scope api|scim] [--expires-days N] [--config F]',
    summary: 'create an API key for the service and print it once',
    details: ["--scope scim makes an identity provider's bearer token: ADMIN, valid only under /scim/v2 (docs/identity-sources.md)."],
    options: [
      { flag: '--rank R', meaning: 'REGULAR, ADMIN, SUPER, or DOOR (a door controller: read-only, reads PINs)' },
      { flag: '--scope S', meaning: "api (default: the API's routes) or scim (only /scim/v2; needs --rank ADMIN)" },
      { flag: '--expires-days N', meaning: 'the key expires after N days (default 0: never)' },
    ],
    config: true,
    exits: [[0, 'the key was printed'], [1, 'the service database cannot be written'], INVALID_CONFIG],
  },
  {
    name: 'service enrol-code',
    args: '[--hours N] [--config F]',
    summary: 'make a single-use enrolment code and print the command that enrols a new board with it (docs/fleet.md)',
    details: ['Needs server.fleet and server.publicUrl. Works whether or not the service is running.'],
    options: [{ flag: '--hours N', meaning: 'the code is good for N hours, 1-720 (default server.fleet.enrolCodeHours, 24)' }],
    config: true,
    exits: [[0, 'the command was printed'], [1, 'the service database cannot be written'], INVALID_CONFIG],
  },
  {
    name: 'service audit verify',
    args: '[--agent ID] [--json] [--config F]',
    summary: "checks the service's copy of every agent's audit chain (docs/audit.md)",
    details: [
      'Names the first bad record of each agent: edited, deleted, inserted, reordered, restarted, or a gap (not received).',
      'Events deleted by server.audit.retentionDays are not findings. Works whether or not the service is running.',
    ],
    options: [
      { flag: '--agent ID', meaning: "this agent's chains only" },
      { flag: '--json', meaning: 'one JSON object: intact, summary, findings' },
    ],
    config: true,
    exits: [[0, 'intact'], [1, 'a finding (each printed, the first bad record first)'], INVALID_CONFIG],
  },
  {
    name: 'service fleet-keys',
    args: '--out DIR',
    summary: "make the fleet's key pairs: the service's identity key and the release key (docs/fleet.md)",
    details: [
      'Writes identity.key (0600) and identity.pub, release.key (0600) and release.pub; refuses to overwrite any file.',
      'identity.key is server.fleet.identityKeyFile; release.pub is server.fleet.releasePublicKeyFile. Keep release.key off the service.',
    ],
    options: [{ flag: '--out DIR', meaning: 'the directory to write the four files to (made 0700 when it does not exist)' }],
    config: false,
    exits: [
      [0, 'the keys were written'],
      [1, 'a file exists already, or DIR cannot be written (nothing was written)'],
    ],
  },
  {
    name: 'service release add',
    args: '[--config F] BUNDLE',
    summary: "store a signed release bundle in the service's database, for rollouts (docs/fleet.md)",
    details: [
      "BUNDLE.sig.json (door-agent release sign) must hold the release key's signature: the key of server.fleet.releasePublicKeyFile.",
      'The same checks as PUT /fleet/releases/VERSION/ARCH: a refusal stores nothing. Works whether or not the service is running.',
    ],
    options: [{ flag: 'BUNDLE', meaning: 'door-agent-<version>-<arch>.tar.gz, its signature beside it in BUNDLE.sig.json' }],
    config: true,
    exits: [[0, 'the release was stored'], [1, 'refused (unsigned, not the release key, altered, stored already): the reason on stderr'], INVALID_CONFIG],
  },
  {
    name: 'service migrate',
    args: '--to URL [--password-file F] [--config F]',
    summary: "copy the service's SQLite database (server.dataDir/service.db) into an empty PostgreSQL database, checked",
    details: [
      'Stop the service first. The source is only read. One transaction: the schema, every table, then a check that the',
      "row counts, the directory's revision, history and tags are the source's; any refusal or mismatch writes nothing.",
      'The password: server.database.passwordFile, else --password-file, else $DOOR_AGENT_DATABASE_PASSWORD (never in the URL).',
    ],
    options: [
      { flag: '--to URL', meaning: 'the empty target: postgres://USER@HOST:PORT/DATABASE[?sslmode=verify-full] (CA: server.database.caFile)' },
      { flag: '--password-file F', meaning: "a file holding the target user's password (mode 0600)" },
    ],
    config: true,
    exits: [
      [0, 'copied and checked: set server.database.url and start the service'],
      [1, 'the copy failed or did not match the source (rolled back: the target is as it was)'],
      [
        78,
        'refused, nothing written: the source missing, running or of another schema version; a bad URL; the target unreachable, refusing the password, too old or not empty',
      ],
    ],
  },
  {
    name: 'service outbox',
    args: '[--config F]',
    summary: 'the e-mail the service queued (invitations, guest links), as JSON lines',
    options: [],
    config: true,
    exits: [[0, 'ok'], [1, 'the service database cannot be read'], INVALID_CONFIG],
  },
  {
    name: 'service identity release',
    args: '--email ADDRESS [--config F]',
    summary: 'a user owned by SCIM or LDAP goes back to being managed at the service (docs/identity-sources.md)',
    details: [
      "Their fields are kept; the source's keys for them (externalId, the LDAP DN) are cleared. Works whether or not the service is running.",
      'Retire the source first (or remove the person there): a SCIM PUT or an LDAP entry with their e-mail claims them again.',
    ],
    options: [{ flag: '--email ADDRESS', meaning: 'the user, by e-mail address (any case)' }],
    config: true,
    exits: [[0, 'released'], [1, 'no such user, the user is already local, or the service database cannot be written'], INVALID_CONFIG],
  },
];

const CONFIG_LOOKUP = 'Config: --config, else $DOOR_AGENT_CONFIG, else /etc/door-agent/config.yaml';

export function findUsage(name: string): CommandUsage | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** The commands whose name starts with these words (`service` -> service, service key create, service outbox). */
export function usagesUnder(words: readonly string[]): CommandUsage[] {
  const exact = findUsage(words.join(' '));
  if (exact) return [exact];
  return COMMANDS.filter((c) => words.every((w, i) => c.name.split(' ')[i] === w));
}

function synopsis(c: CommandUsage): string {
  return `door-agent ${c.name}${c.args ? ` ${c.args}` : ''}`;
}

/** The line a usage error ends with. */
export function usageLine(name: string): string {
  const c = findUsage(name);
  return c ? `usage: ${synopsis(c)} (door-agent ${name} --help for more)` : 'run door-agent --help';
}

/** `door-agent <command> --help`: the synopsis, each option, the config lookup and the exit codes. */
export function commandHelp(c: CommandUsage): string {
  const options = [...c.options, ...(c.config ? [CONFIG_OPTION] : []), { flag: '-h, --help', meaning: 'this help' }];
  const width = Math.max(...options.map((o) => o.flag.length));
  const exits: Array<[number, string]> = [...c.exits, [2, 'usage error (unknown option, missing argument)']];
  exits.sort((a, b) => a[0] - b[0]);
  return (
    `Usage: ${synopsis(c)}\n\n` +
    `${c.summary}\n` +
    (c.details ?? []).map((l) => `${l}\n`).join('') +
    `\nOptions:\n${options.map((o) => `  ${o.flag.padEnd(width)}  ${o.meaning}\n`).join('')}` +
    (c.config ? `\n${CONFIG_LOOKUP}\n` : '') +
    `\nExit codes:\n${exits.map(([code, meaning]) => `  ${String(code).padStart(2)}  ${meaning}\n`).join('')}`
  );
}

/** `door-agent --help`. */
export function topLevelHelp(): string {
  return (
    'door-agent: door controller with offline access decisions\n\n' +
    'Usage: door-agent <command> [options]\n' +
    '       door-agent <command> --help (or door-agent help <command>) for its options and exit codes\n\n' +
    'Commands:\n' +
    COMMANDS.map((c) => `  ${synopsis(c).slice('door-agent '.length)}\n        ${c.summary}\n`).join('') +
    `\n${CONFIG_LOOKUP}\n` +
    'Exit codes: 0 ok/granted, 1 denied or failed, 2 usage, 78 invalid configuration\n'
  );
}

/**
 * What parseArgs takes for a command, made from its options above: `--x V` a string, `--x` a boolean, `NAME` a
 * positional, `[NAME]` one that may be left out (`required` counts the others).
 */
export function parserSpec(c: CommandUsage): { options: Record<string, { type: 'string' | 'boolean' }>; positionals: string[]; required: number } {
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  const positionals: string[] = [];
  for (const o of [...c.options, ...(c.config ? [CONFIG_OPTION] : [])]) {
    const [flag, value] = o.flag.split(' ');
    if (!flag!.startsWith('--')) positionals.push(flag!);
    else options[flag!.slice(2)] = { type: value === undefined ? 'boolean' : 'string' };
  }
  return { options, positionals, required: positionals.filter((p) => !p.startsWith('[')).length };
}

/** The words of argv that name a command (`service key create`), as far as they match the table. */
export function commandWords(argv: readonly string[]): string[] {
  const words: string[] = [];
  for (const word of argv) {
    if (!COMMANDS.some((c) => c.name.split(' ')[words.length] === word && words.every((w, i) => c.name.split(' ')[i] === w))) break;
    words.push(word);
  }
  return words;
}
