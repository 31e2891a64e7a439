/**
 * The few PN532 commands the reader uses (NXP UM0701-02, section 7), pure: the data of each command frame (command
 * code and parameters, after TFI) and the parsing of its answer (the code is the command's plus one).
 */

const CMD = {
  getFirmwareVersion: 0x02,
  samConfiguration: 0x14,
  rfConfiguration: 0x32,
  inListPassiveTarget: 0x4a,
} as const;

/**
 * The HSU wake-up (UM0701-02 6.3.2; what libnfc and Adafruit's driver send): 0x55 0x55, then zeros long enough for
 * the PN532 to leave power-down (or its "low VBAT" start-up state) before the first command's preamble.
 */
export const HSU_WAKE_UP = Buffer.concat([Buffer.from([0x55, 0x55]), Buffer.alloc(14)]);

/** GetFirmwareVersion: no parameters. */
export const getFirmwareVersion = (): Buffer => Buffer.from([CMD.getFirmwareVersion]);

/** SAMConfiguration: normal mode (no SAM), a 1 s virtual-card timeout (20 × 50 ms), the IRQ pin used. */
export const samNormalMode = (): Buffer => Buffer.from([CMD.samConfiguration, 0x01, 0x14, 0x01]);

/**
 * RFConfiguration, item 0x05 (MaxRetries): ATR retries 0xFF (the default), PSL retries 1, and `passiveRetries`
 * activation retries. Its default, 0xFF, is "retry for ever": InListPassiveTarget would then not answer until a
 * card came, and a silent reader could not be told from an empty field. With a few retries it answers "no target".
 */
export const maxRetries = (passiveRetries: number): Buffer => Buffer.from([CMD.rfConfiguration, 0x05, 0xff, 0x01, passiveRetries]);

/** InListPassiveTarget: at most one target, 106 kbps type A (ISO/IEC 14443 A: MIFARE, NTAG, DESFire). */
export const listOneTypeA = (): Buffer => Buffer.from([CMD.inListPassiveTarget, 0x01, 0x00]);

export interface FirmwareVersion {
  /** 0x32 for a PN532. */
  ic: number;
  version: number;
  revision: number;
  /** Bit 0 ISO/IEC 14443 A, bit 1 type B, bit 2 ISO 18092. */
  support: number;
}

/** GetFirmwareVersion's answer data (after the response code): IC, Ver, Rev, Support. */
export function parseFirmwareVersion(data: Buffer): FirmwareVersion | null {
  if (data.length < 4) return null;
  return { ic: data[0]!, version: data[1]!, revision: data[2]!, support: data[3]! };
}

/** How status and the log name the module: "PN532 v1.6" (another IC as its hex code, e.g. "PN5x 0x31 v1.4"). */
export function describeFirmware(fw: FirmwareVersion): string {
  const ic = fw.ic === 0x32 ? 'PN532' : `PN5x 0x${fw.ic.toString(16)}`;
  return `${ic} v${fw.version}.${fw.revision}`;
}

/**
 * InListPassiveTarget's answer data (after the response code) for 106 kbps type A: NbTg, then per target Tg,
 * SENS_RES (2), SEL_RES (1), NFCIDLength, NFCID1 (the UID, in the order the card sent it), [ATS]. The first
 * target's UID, null for no target, or a reason when the answer is malformed.
 */
export function parseTypeATarget(data: Buffer): { uid: Buffer | null } | { malformed: string } {
  if (data.length < 1) return { malformed: 'no NbTg' };
  if (data[0] === 0) return { uid: null };
  if (data.length < 6) return { malformed: `a target of ${data.length - 1} bytes, shorter than its header` };
  const idLength = data[5]!;
  if (data.length < 6 + idLength) return { malformed: `NFCIDLength ${idLength} runs past the answer` };
  return { uid: Buffer.from(data.subarray(6, 6 + idLength)) };
}
