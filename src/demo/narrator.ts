import { EMERGENCY_ACTIVE_LOG, EMERGENCY_NORMAL_LOG } from '../door/emergencyInput.js';

/** What the demo's terminal takes, said when it is typed something else (the reader dropped it as noise). @internal */
export const ACCEPTED_INPUT = 'not understood: type a card number (4213578), a PIN ending with # (1234#) or a QR token, then Enter; Ctrl-C stops the demo';

/** A credential as a person names it: "card …78", "PIN", "QR token" (the log's kind and hint, never both words twice). */
function credential(kind: unknown, hint: unknown): string {
  if (kind === 'pin') return 'PIN';
  if (kind === 'token') return 'QR token';
  return `${String(kind ?? '')} ${String(hint ?? '')}`.trim();
}

/** An unlock's cause: a decision names its credential as "<kind> <hint>" (doorRuntime); other causes as they are. */
function cause(value: unknown): string {
  const text = String(value);
  const decided = /^(card|pin|token) (.*)$/.exec(text);
  return decided ? credential(decided[1], decided[2]) : text;
}

/**
 * Turns the agent's JSON log lines into the few sentences a person trying the demo wants to read, with their
 * times as `clock` shows them (clockTime.ts: 24-hour, in the agent's zone).
 */
export function formatEvent(line: string, clock: (at: number | string) => string): string | null {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  const time = typeof entry.time === 'number' || typeof entry.time === 'string' ? clock(entry.time) : '';
  const who = credential(entry.kind, entry.hint);
  switch (entry.msg) {
    case 'access granted':
      return `${time}  GRANTED  ${who}`;
    case 'access denied':
      return `${time}  DENIED   ${who}: ${String(entry.reason)}`;
    case 'unlocked':
      return `${time}  door UNLOCKED (${cause(entry.cause)})${entry.relockAt ? `, relocks at ${clock(entry.relockAt as number | string)}` : ', held open'}`;
    case 'locked':
      return `${time}  door LOCKED (${cause(entry.cause)})`;
    case 'card accepted, waiting for PIN':
      return `${time}  card accepted: now the PIN`;
    case 'keypad locked out after repeated wrong PINs':
    case 'door forced open':
    case 'door held open':
    case 'command rejected':
      return `${time}  ${String(entry.msg)}${entry.error ? `: ${String(entry.error)}` : ''}`;
    case EMERGENCY_ACTIVE_LOG:
      return `${time}  FIRE ALARM: the emergency input releases the door until it clears`;
    case EMERGENCY_NORMAL_LOG:
      return `${time}  fire alarm cleared`;
    case 'reader noise dropped':
      return `${time}  ${ACCEPTED_INPUT}`;
    case 'guest link received':
      return `${time}  guest link ${String(entry.guestLink)} received (${String(entry.result)})`;
    case 'sync done':
      return `${time}  synced from the service`;
    default:
      return typeof entry.level === 'number' && entry.level >= 50 ? `${time}  ERROR: ${String(entry.msg)}` : null;
  }
}
