/** OSDP command and reply codes (SIA OSDP v2.2, section 6 and 7) that the control panel uses. */
export const CMD = { POLL: 0x60, ID: 0x61, CAP: 0x62, LSTAT: 0x64, LED: 0x69, BUZ: 0x6a, KEYSET: 0x75, CHLNG: 0x76, SCRYPT: 0x77 } as const;
export const REPLY = { ACK: 0x40, NAK: 0x41, PDID: 0x45, PDCAP: 0x46, LSTATR: 0x48, RAW: 0x50, KEYPAD: 0x53, CCRYPT: 0x76, RMAC_I: 0x78, BUSY: 0x79 } as const;
export const NAK_SEQUENCE = 0x04;
