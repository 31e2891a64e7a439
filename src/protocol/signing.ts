import { createHmac, timingSafeEqual } from 'node:crypto';

/** HMAC-SHA256 of `text` with `secret`, hex: the signature of commands and guest links. */
export function sign(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}

/** Whether `signature` (hex) is the signature of `text`, compared in constant time. */
export function signatureMatches(secret: string, text: string, signature: string): boolean {
  const expected = Buffer.from(sign(secret, text), 'hex');
  const given = Buffer.from(signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The string a command signature covers: `<uuid>\n<lock_state>\n<unlock_time or empty>\n<request_id>\n<issued_at>`. */
export function signedString(fields: { uuid: string; lockState: boolean; unlockTime: number | undefined; requestId: string; issuedAt: number }): string {
  return `${fields.uuid}\n${fields.lockState}\n${fields.unlockTime ?? ''}\n${fields.requestId}\n${fields.issuedAt}`;
}

/** JSON with object keys sorted at every level and no white space: what a signature covers. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
