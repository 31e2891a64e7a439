import { dataOfWire } from './auditChain.js';
import { ALARM_TYPES } from '../api/eventTypes.js';

/**
 * An audit event as a syslog message (docs/audit.md, "SIEM export: syslog"): RFC 5424's layout with the event in
 * structured data, or the event as one JSON object; framed by octet counting (RFC 5425, `LEN SP MSG`). Card
 * numbers are never in an event (hints only), so none reaches a SIEM.
 */

/** An audit event as on the wire (`id`, `seq`, `at`, `door`, `type`, the chain's fields and its own fields). */
export interface AuditWireEvent {
  id: string;
  seq: number;
  at: string;
  door: string | null;
  type: string;
  [field: string]: unknown;
}

export interface SyslogFormat {
  format: 'rfc5424' | 'json';
  /** A facility name of RFC 5424 (the config's list: `authpriv`, `local0`, ...). */
  facility: string;
  enterpriseId: number;
  /** HOSTNAME: the agent's id, or the service's host name. */
  hostname: string;
}

/** RFC 5424's facility names, by code (6.2.1); the configuration takes one of them. */
export const SYSLOG_FACILITIES = [
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'ntp',
  'audit',
  'alert',
  'clock',
  'local0',
  'local1',
  'local2',
  'local3',
  'local4',
  'local5',
  'local6',
  'local7',
] as const;

export type SyslogSeverity = 'alert' | 'warning' | 'info';

const SEVERITY_CODES: Record<SyslogSeverity, number> = { alert: 1, warning: 4, info: 6 };

/** Alarms (those raised on `P/doors/<uuid>/alarm`), and a reader's own tamper switch. */
const ALERT_TYPES: ReadonlySet<string> = new Set([...ALARM_TYPES, 'reader_tamper']);

/** Refusals and lockouts. */
const WARNING_TYPES: ReadonlySet<string> = new Set([
  'access_denied',
  'command_rejected',
  'passback_violation',
  'sync_refused',
  'keypad_locked_out',
  'card_locked_out',
  'duress_collision',
]);

/** An event type's severity (docs/audit.md, "Every event type and its forms"). @internal */
export function syslogSeverity(type: string): SyslogSeverity {
  if (ALERT_TYPES.has(type)) return 'alert';
  if (WARNING_TYPES.has(type)) return 'warning';
  return 'info';
}

/** RFC 5424 PRIVAL: facility * 8 + severity. @internal */
export function syslogPri(facility: string, type: string): number {
  const code = (SYSLOG_FACILITIES as readonly string[]).indexOf(facility);
  if (code < 0) throw new Error(`unknown syslog facility ${facility}`);
  return code * 8 + SEVERITY_CODES[syslogSeverity(type)];
}

/** The wire fields `meta@PEN` carries (the header has `at` and `type`; the chain's `prev_hash` is the previous `hash`). */
const META_FIELDS = ['id', 'seq', 'door', 'chain', 'hash'] as const;

/**
 * An SD-NAME (RFC 5424 6.3.2: 1 to 32 printable US-ASCII characters but `=`, space, `]` and `"`): each other
 * character becomes `_`, and the name is cut to 32. Event fields are snake_case ASCII, so none is changed today. @internal
 */
export function sdName(name: string): string {
  return name.replace(/[^!-~]|[=\]"]/g, '_').slice(0, 32);
}

/** A PARAM-VALUE (RFC 5424 6.3.3): `"`, `\` and `]` escaped with a backslash. @internal */
export function sdValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  return text.replace(/["\\\]]/g, (c) => `\\${c}`);
}

/** One SD-ELEMENT; null when it has no parameter (RFC 5424 allows an empty one, but it says nothing). */
function sdElement(id: string, params: ReadonlyArray<readonly [string, unknown]>): string {
  const parts = params.map(([name, value]) => ` ${sdName(name)}="${sdValue(value)}"`);
  return `[${id}${parts.join('')}]`;
}

/** The event in a few words: its type, who, where, why. */
function eventText(event: AuditWireEvent): string {
  const words = [event.type.replaceAll('_', ' ')];
  if (typeof event.who === 'string') words.push(`by ${event.who}`);
  if (event.door !== null) words.push(`at door ${event.door}`);
  if (typeof event.reason === 'string') words.push(`(${event.reason})`);
  return words.join(' ');
}

/** The UTF-8 byte order mark RFC 5424 asks before a MSG in UTF-8 (6.4). */
const BOM = '\uFEFF';

/** A header field of PRINTUSASCII (1 to `max` characters); NILVALUE when nothing printable is left. */
function headerField(value: string, max: number): string {
  const printable = value.replace(/[^!-~]/g, '_').slice(0, max);
  return printable === '' ? '-' : printable;
}

/** An audit event as an RFC 5424 message (docs/audit.md). @internal */
export function toRfc5424(event: AuditWireEvent, agent: string, format: SyslogFormat): string {
  const meta: Array<[string, unknown]> = [
    ['id', event.id],
    ['agent', agent],
  ];
  for (const field of META_FIELDS) {
    const value = event[field];
    if (field === 'id' || value === undefined || value === null) continue;
    meta.push([field, value]);
  }
  // Fields whose mapped names collide keep the first (none do today: event fields are snake_case ASCII).
  const fields = new Map<string, unknown>();
  for (const [name, value] of Object.entries(dataOfWire(event))) {
    const mapped = sdName(name);
    if (mapped !== '' && value !== undefined && !fields.has(mapped)) fields.set(mapped, value);
  }
  const pen = format.enterpriseId;
  const structured = sdElement(`meta@${pen}`, meta) + (fields.size > 0 ? sdElement(`event@${pen}`, [...fields]) : '');
  const text = eventText(event);
  // Plain ASCII needs no BOM (MSG-ANY); text with a name in another script is UTF-8, marked as RFC 5424 asks.
  const msg = /^[\x20-\x7e]*$/.test(text) ? text : `${BOM}${text}`;
  const header = [
    `<${syslogPri(format.facility, event.type)}>1`,
    event.at,
    headerField(format.hostname, 255),
    'door-agent',
    '-',
    headerField(event.type, 32),
  ].join(' ');
  return `${header} ${structured} ${msg}`;
}

/** An audit event as one JSON object: the wire event with the agent's id. @internal */
export function toJsonLine(event: AuditWireEvent, agent: string): string {
  return JSON.stringify(Object.assign({ agent }, event));
}

/** The message of `format` for an event. */
export function syslogMessage(event: AuditWireEvent, agent: string, format: SyslogFormat): string {
  return format.format === 'json' ? toJsonLine(event, agent) : toRfc5424(event, agent, format);
}

/** RFC 5425's octet-counting frame: the message's length in bytes, a space, the message. */
export function syslogFrame(message: string): Buffer {
  const body = Buffer.from(message, 'utf8');
  return Buffer.concat([Buffer.from(`${body.length} `, 'ascii'), body]);
}
