import { DEFAULT_PIN_LABELS, isPinLabel, pinLabelSet } from '../../core/credentials.js';
import { MASKED_PIN } from '../../api/shapes.js';

/**
 * What the console shows of a credential: never a whole card number, never a PIN, whatever the rank (the page
 * source is as readable as the screen). A card shows its last four characters at most, and always hides at least
 * three; a PIN (a label of server.pinLabels) shows as the API masks it for REGULAR keys.
 */
export class CredentialMask {
  private readonly pinLabels: ReadonlySet<string>;

  constructor(labels: readonly string[] | undefined) {
    this.pinLabels = pinLabelSet(labels ?? DEFAULT_PIN_LABELS);
  }

  isPin(label: string | null): boolean {
    return isPinLabel(label, this.pinLabels);
  }

  show(card: { number: string; label: string | null }): string {
    if (this.isPin(card.label)) return MASKED_PIN;
    const visible = Math.max(0, Math.min(4, card.number.length - 3));
    return `…${card.number.slice(card.number.length - visible)}`;
  }
}
