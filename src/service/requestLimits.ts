import { BadRequest } from './badRequest.js';

/**
 * Sizes a request may have (issue 32 item 17: one POST /groups with 120,000 add_ids took the service past its
 * unit's MemoryMax). Each list is refused with 413 and a message naming the parameter and the limit, and a body
 * nested too deep with 400, before any work (docs/reference-service.md, "Request limits").
 */
export const REQUEST_LIMITS = {
  /** add_ids / del_ids of POST and PUT /groups. */
  ids: 10_000,
  /** emails of POST /invites (and its smartcards lists), email_list of POST /magiclinkadmin (and its smartcards). */
  emails: 10_000,
  /** The smartcards (cards and PINs) of one user, and the groups of one POST /invites. */
  perUser: 100,
  /** computer_usernames of PUT /modifyallusernames. */
  usernames: 100,
  /** resource_id_list of POST /magiclinkadmin. */
  resources: 1000,
  /** The body of PUT /modifysmartcard(s): 100 cards with long labels fit several times over. */
  smartcardBody: 64 * 1024,
  /**
   * What is read of a body before its request has a valid key (keyCheck.ts): a key in the body must come within
   * these bytes (what came in the same network read, up to 64 KiB more, is held too, then dropped).
   */
  bodyBeforeKey: 8 * 1024,
  /** Nesting of a JSON body (or of a parameter holding JSON): objects and arrays inside each other. */
  depth: 32,
} as const;

/** A list over its limit: 413 (Content Too Large), naming it. */
export function tooMany(field: string, count: number, max: number): BadRequest {
  return new BadRequest(`${field}: at most ${max} items in one request (this one has ${count}): send them in several requests`, 413);
}

/**
 * Refuses JSON text nested deeper than REQUEST_LIMITS.depth (400), before it is parsed: one pass over the text,
 * counting brackets outside strings. What parses deeper would cost stack and time in every step after it.
 */
export function checkJsonDepth(text: string, what: string, max: number = REQUEST_LIMITS.depth): void {
  // Shallow enough whatever it holds: fewer brackets than the limit.
  if (text.length <= max) return;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) throw new BadRequest(`${what}: JSON nested deeper than ${max} levels (at character ${i}): send flatter data`);
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}
