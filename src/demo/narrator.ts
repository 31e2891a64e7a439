/** Turns the agent's JSON log lines into the few sentences a person trying the demo wants to read. */
export function formatEvent(line: string): string | null {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toLocaleTimeString() : '';
  const who = `${String(entry.kind ?? '')} ${String(entry.hint ?? '')}`.trim();
  switch (entry.msg) {
    case 'access granted':
      return `${time}  GRANTED  ${who}`;
    case 'access denied':
      return `${time}  DENIED   ${who}: ${String(entry.reason)}`;
    case 'unlocked':
      return `${time}  door UNLOCKED (${String(entry.cause)})${entry.relockAt ? `, relocks at ${new Date(String(entry.relockAt)).toLocaleTimeString()}` : ', held open'}`;
    case 'locked':
      return `${time}  door LOCKED (${String(entry.cause)})`;
    case 'card accepted, waiting for PIN':
      return `${time}  card accepted: now the PIN`;
    case 'keypad locked out after repeated wrong PINs':
    case 'door forced open':
    case 'door held open':
    case 'command rejected':
      return `${time}  ${String(entry.msg)}${entry.error ? `: ${String(entry.error)}` : ''}`;
    case 'guest link received':
      return `${time}  guest link ${String(entry.guestLink)} received (${String(entry.result)})`;
    case 'sync done':
      return `${time}  synced from the service`;
    default:
      return typeof entry.level === 'number' && entry.level >= 50 ? `${time}  ERROR: ${String(entry.msg)}` : null;
  }
}
