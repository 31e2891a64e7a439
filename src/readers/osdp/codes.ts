/** OSDP command and reply codes (SIA OSDP v2.2, section 6 and 7) that the control panel uses. */
export const CMD = {
  POLL: 0x60,
  ID: 0x61,
  CAP: 0x62,
  LSTAT: 0x64,
  LED: 0x69,
  BUZ: 0x6a,
  TEXT: 0x6b,
  COMSET: 0x6e,
  KEYSET: 0x75,
  CHLNG: 0x76,
  SCRYPT: 0x77,
  FILETRANSFER: 0x7c,
} as const;
export const REPLY = {
  ACK: 0x40,
  NAK: 0x41,
  PDID: 0x45,
  PDCAP: 0x46,
  LSTATR: 0x48,
  RAW: 0x50,
  KEYPAD: 0x53,
  COM: 0x54,
  CCRYPT: 0x76,
  RMAC_I: 0x78,
  BUSY: 0x79,
  FTSTAT: 0x7a,
} as const;
export const NAK_SEQUENCE = 0x04;

/** osdp_NAK's error codes (SIA OSDP v2.2, table 47), as an operator reads them. */
const NAK_REASONS: Record<number, string> = {
  0: 'no error given',
  1: 'bad checksum or CRC',
  2: 'command length error',
  3: 'unknown command (the reader does not implement it)',
  4: 'sequence number error',
  5: 'secure channel not supported',
  6: 'secure channel conditions not met',
  7: 'biometric type not supported',
  8: 'biometric format not supported',
  9: 'unable to process the command record',
};

/** An osdp_NAK's data as a sentence: `NAK 3: unknown command (...)`. */
export function describeNak(data: Buffer): string {
  const code = data[0];
  if (code === undefined) return 'NAK without an error code';
  return `NAK ${code}: ${NAK_REASONS[code] ?? 'a code the standard does not define'}`;
}
