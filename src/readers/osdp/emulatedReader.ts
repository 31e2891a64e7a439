import type { Session } from './emulatorCrypto.js';

/** One address the OSDP emulator answers for (readerEmulator.ts): what it holds, and the faults the tests set. */
export interface EmulatedReader {
  address: number;
  /** Stops answering (unplugged, powered off) while true. */
  silent: boolean;
  /** Replies with a broken CRC while true. */
  corrupt: boolean;
  /** Replies waiting for the next poll (RAW, KEYPAD, LSTATR), oldest first. */
  pending: Array<{ code: number; data: number[] }>;
  /** Commands received, by code. */
  received: number[];
  /** Expected sequence number of the next command; 0 resets. */
  lastSqn: number | null;
  /** The last reply without its CRC, sent again when the CP repeats a command's sequence number (its reply was lost). */
  lastReply: Buffer | null;
  /** The reader's secure channel key (null: plain only). */
  scbk: Buffer | null;
  session: Session | null;
  /** Secure channel events, for the tests: 'established', 'bad cryptogram', 'bad mac'. */
  log: string[];
  /** Sends its next secure reply with a wrong MAC (a forged or altered packet). */
  forgeNextMac: boolean;
  /** The last command came with the 8-bit checksum: the replies do too. */
  checksumMode: boolean;
  /** The code of the last command answered (a retry must repeat it). */
  lastCode: number | null;
  /** Its tamper switch open, its power failed (reported to osdp_LSTAT). */
  tamper: boolean;
  powerFailure: boolean;
  /**
   * Answers osdp_LSTAT on the secure channel with security block 0x15 (the command's MAC-only type), its data
   * MACed but not encrypted, where the standard says 0x16/0x18: the reply issue 32 reports from libosdp 3.2.0's PD
   * (the 3.2.0 PD checked in docs/hardware.md answered in 0x18).
   */
  lstatReplyInBlock15: boolean;
  /** Its baud rate: nominal on a pty, but osdp_COMSET changes it and the tests read it back. */
  baudRate: number;
  /** It has a display: osdp_PDCAP lists text output, and osdp_TEXT is shown (else refused: NAK 3, as libosdp). */
  display: boolean;
  /** Every osdp_TEXT shown, oldest first. */
  shown: Array<{ text: string; command: number; seconds: number; row: number; column: number }>;
  /** Refuses osdp_COMSET with this NAK code (null: takes it). */
  comsetNak: number | null;
  /** Answers osdp_COMSET with these settings rather than the ones asked for, and moves to them (a PD that chose). */
  comsetAnswer: { address: number; baudRate: number } | null;
  /** Answers osdp_COM as asked but stays where it is (a PD whose firmware does not switch). */
  comsetStays: boolean;
  /** Its firmware as osdp_PDID names it (three numbers, 0-255 each). */
  firmware: string;
  /** osdp_PDCAP lists this receive buffer (function 10), and a longer command is refused (NAK 2); null: none listed. */
  receiveBuffer: number | null;
  /** osdp_FTSTAT's FtDelay (ms) and FtUpdateMsgMax (the largest fragment it wants; 0: no change). */
  ftDelayMs: number;
  ftUpdateMsgMax: number;
  /** How long it says "finishing" (FtStatusDetail 3) once it has the whole file, before its verdict (ms). */
  ftFinishingMs: number;
  /** How long it is away restarting once it installed a file (ms). */
  rebootMs: number;
  /** Drops off the line (silent, the partial file lost) once it has this many bytes of a file: a transfer broken midway. */
  dropLineAfterBytes: number | null;
  /** The file being received: its size, the bytes so far, until when it finishes, when the next fragment may come. */
  upload: { total: number; data: Buffer; got: number; finishingUntil: number | null; notBefore: number } | null;
  /** Each fragment's size, in order; fragments that came before its FtDelay had passed. */
  fragments: number[];
  earlyFragments: number;
  /** The files it installed, oldest first. */
  installed: Buffer[];
  /** Away restarting until this time (the emulator's clock), null when up. */
  restartingUntil: number | null;
}

/** A reader as it is at power-up: plain, nothing pending, no faults. */
export function emulatedReader(address: number): EmulatedReader {
  return {
    address,
    silent: false,
    corrupt: false,
    pending: [],
    received: [],
    lastSqn: null,
    lastReply: null,
    scbk: null,
    session: null,
    log: [],
    forgeNextMac: false,
    checksumMode: false,
    lastCode: null,
    tamper: false,
    powerFailure: false,
    lstatReplyInBlock15: false,
    baudRate: 9600,
    display: false,
    shown: [],
    comsetNak: null,
    comsetAnswer: null,
    comsetStays: false,
    firmware: '3.4.5',
    receiveBuffer: null,
    ftDelayMs: 0,
    ftUpdateMsgMax: 0,
    ftFinishingMs: 0,
    rebootMs: 300,
    dropLineAfterBytes: null,
    upload: null,
    fragments: [],
    earlyFragments: 0,
    installed: [],
    restartingUntil: null,
  };
}
