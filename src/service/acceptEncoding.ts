/** The content codings the service stores a body in, besides identity (issue 28 item 1). */
export type Coding = 'br' | 'gzip';
export type Encoding = Coding | 'identity';

/** Tried in this order when a client gives several the same weight: brotli answers are the smaller. */
const PREFERENCE: readonly Coding[] = ['br', 'gzip'];
/** A header longer than this is not read (identity): no client needs more for a list of codings. */
const MAX_HEADER_LENGTH = 1024;
const Q_VALUE = /^q=(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/i;

/**
 * The coding to answer in, from a request's Accept-Encoding (RFC 9110 12.5.3), read simply: a comma-separated
 * list of codings, each with an optional `;q=` weight (0 to 1, default 1); `*` stands for every coding not listed;
 * `x-gzip` is gzip. The coding with the highest weight above 0 among br and gzip wins (br on a tie); none (no
 * header, an empty one, only unknown codings, `br;q=0`, a malformed weight, a header too long) is identity, which
 * is always acceptable here: a client that refuses identity too (`identity;q=0`) still gets it, as RFC 9110 allows.
 */
export function negotiateEncoding(text: string | undefined): Encoding {
  if (text === undefined || text.length === 0 || text.length > MAX_HEADER_LENGTH) return 'identity';
  const weights = new Map<string, number>();
  for (const part of text.split(',')) {
    const [rawName = '', ...params] = part.split(';').map((s) => s.trim());
    const name = rawName.toLowerCase() === 'x-gzip' ? 'gzip' : rawName.toLowerCase();
    if (name === '') continue;
    let q = 1;
    for (const param of params) {
      if (!/^q=/i.test(param)) continue; // other parameters are not ours to read
      const match = Q_VALUE.exec(param);
      q = match ? Number(match[1]) : 0; // a weight that is not one: not acceptable
    }
    // The same coding twice: the first says it (RFC 9110 leaves it open; simple and predictable).
    if (!weights.has(name)) weights.set(name, q);
  }
  const star = weights.get('*');
  let best: Encoding = 'identity';
  let bestQ = 0;
  for (const coding of PREFERENCE) {
    const q = weights.get(coding) ?? star ?? 0;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  return best;
}
