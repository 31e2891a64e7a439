import type { ReaderFeedback } from '../readerFrames.js';
import { CMD } from './codes.js';

/**
 * osdp_TEXT (0x6B) for a reader with a display, pure (SIA OSDP v2.2, 6.10): the decision's text, shown for a
 * while on row 1. Sent only to a reader whose osdp_PDCAP lists text output (function code 6).
 */

/** What a door's reader shows per decision: `text:` on an OSDP reader in the configuration. */
export interface OsdpTextOptions {
  granted?: string;
  denied?: string;
  /** How long the text stays (the temporary text's timer, 1-255 s). */
  seconds: number;
}

/** libosdp's PD refuses a longer text (OSDP_CMD_TEXT_MAX_LEN); two 16-character rows show 32. */
const OSDP_TEXT_MAX = 32;

/** Why a configured text cannot be shown, or null. */
export function textProblem(text: string): string | null {
  if (text.length > OSDP_TEXT_MAX) return `at most ${OSDP_TEXT_MAX} characters (the most one osdp_TEXT carries to a reader's display); this has ${text.length}`;
  const bad = [...text].find((c) => c < ' ' || c > '~');
  if (bad !== undefined) return `printable ASCII only (a reader's display has no other characters): ${JSON.stringify(bad)} is not`;
  return null;
}

/** PDCAP function code 6: reader text output (compliance 0: none; its item count: the readers with a display). */
const CAP_TEXT_OUTPUT = 6;

/** osdp_PDCAP's data (3 bytes per function: code, compliance, number of items): does the reader have a display? */
export function hasTextOutput(pdcap: Buffer): boolean {
  for (let at = 0; at + 3 <= pdcap.length; at += 3) {
    if (pdcap[at] === CAP_TEXT_OUTPUT) return pdcap[at + 1]! > 0 && pdcap[at + 2]! > 0;
  }
  return false;
}

/** Text command 3: temporary text, no wrap; 4: the same, wrapped onto the next rows. */
const TEMPORARY_WRAPPED = 4;

/** osdp_TEXT's data: reader 0, temporary wrapped text for `seconds`, from row 1 column 1. @internal */
export function encodeText(text: string, seconds: number): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  return Buffer.concat([Buffer.from([0, TEMPORARY_WRAPPED, seconds, 1, 1, bytes.length]), bytes]);
}

/** The TEXT for a decision, when the site gave one: granted for a grant, denied for every refusal. */
export function textCommand(kind: ReaderFeedback, text: OsdpTextOptions | undefined): { code: number; data: Buffer } | null {
  const shown = kind === 'grant' ? text?.granted : kind === 'deny' || kind === 'lockedOut' || kind === 'lockdown' ? text?.denied : undefined;
  return shown === undefined ? null : { code: CMD.TEXT, data: encodeText(shown, text!.seconds) };
}
