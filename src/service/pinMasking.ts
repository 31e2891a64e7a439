import { MASKED_PIN } from '../api/shapes.js';
import { DEFAULT_PIN_LABELS, isPinLabel, pinLabelSet } from '../core/credentials.js';
import type { KeyKind } from './apiKeys.js';

/**
 * Who reads PINs (issue 32 item 16). PINs are stored as smartcard entries whose label is one of
 * `server.pinLabels` (default PIN, compared as the agent's `access.pinLabels`: trimmed, any case). With the card,
 * a PIN gives both factors of a card_and_pin door, so only ADMIN (and SUPER) keys and DOOR keys (door
 * controllers) read them in clear; to every other key each PIN entry's `number` is MASKED_PIN ("****": a string,
 * as the API document's type says, but not digits, so no client can take it for a PIN), its label kept.
 */
export function readsPins(kind: KeyKind | undefined): boolean {
  return kind === 'ADMIN' || kind === 'SUPER' || kind === 'DOOR';
}

type Card = { number: string; label?: string | null };

export class PinMasking {
  private readonly labels: ReadonlySet<string>;

  constructor(labels: readonly string[] = DEFAULT_PIN_LABELS) {
    this.labels = pinLabelSet(labels);
  }

  /** The cards with every PIN's number masked (copies; the others as they are). */
  cards<T extends Card>(cards: readonly T[]): T[] {
    return cards.map((c) => (isPinLabel(c.label ?? null, this.labels) ? { ...c, number: MASKED_PIN } : c));
  }

  /** A GET /user detail (or a GET /directory one) with its PINs masked. */
  detail<T extends Record<string, unknown>>(detail: T): T {
    const cards = detail.smartcards;
    return Array.isArray(cards) ? { ...detail, smartcards: this.cards(cards as Card[]) } : detail;
  }

  /** The `details` of a GET /directory answer, each masked. */
  details(details: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
    return Object.fromEntries(Object.entries(details).map(([id, d]) => [id, this.detail(d)]));
  }
}
