import type { Logger } from 'pino';
import type { Lockdowns } from '../door/lockdowns.js';
import type { Db } from '../store/database.js';
import { isCacheDamage } from '../store/cacheDamage.js';
import type { GuestLinkStore } from '../store/guestLinkStore.js';
import { readMeta, writeMeta } from '../store/meta.js';

const KEY = 'mqtt:signed_mode';

/**
 * The switch to signed mode (mqtt.commandSecretFile set where it was not, or an agent from before this check):
 * the issued_at learned from unsigned messages (per lockdown scope, the holidays, each guest link) is
 * forgotten, so an unsigned message dated far ahead cannot make every signed one look stale. The lockdowns,
 * holidays and links themselves stay as they are until signed messages change them. Returns whether it reset.
 */
export function resetOnSwitchToSigned(deps: {
  state: Db;
  signed: boolean;
  lockdowns: Lockdowns;
  guestLinks: GuestLinkStore;
  forgetHolidaysIssuedAt: () => void;
  logger: Logger;
}): boolean {
  const { state, signed, logger } = deps;
  const before = readMeta<boolean>(state, KEY);
  let reset = false;
  if (signed && before !== true) {
    const scopes = deps.lockdowns.forgetIssuedAt();
    deps.forgetHolidaysIssuedAt();
    let links: number | null = null;
    try {
      links = deps.guestLinks.forgetVersions();
    } catch (err) {
      // A damaged cache: the rebuilt one that replaces it holds no issued_at to forget.
      if (!isCacheDamage(err)) throw err;
    }
    logger.warn(
      { lockdownScopes: scopes, guestLinks: links },
      'signed mode (mqtt.commandSecretFile) is new here: the issued_at learned from unsigned messages is forgotten',
    );
    reset = true;
  }
  if (before !== signed) writeMeta(state, KEY, signed);
  return reset;
}
