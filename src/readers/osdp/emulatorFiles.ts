import type { EmulatedReader } from './emulatedReader.js';

/**
 * The reader emulator's side of osdp_FILETRANSFER (SIA OSDP v2.2, 6.26 and 7.25), written from the standard and not
 * from the control panel's fileTransfer.ts: it takes the fragments in order, answers each with osdp_FTSTAT (its
 * FtDelay and FtUpdateMsgMax as set), says "finishing" for a while if told to, then checks the file and installs
 * it. The emulator's firmware format: a first line `DAFW <a.b.c> <n>` followed by n bytes; installed, a.b.c is the
 * firmware its osdp_PDID names, after a restart of `rebootMs`. No header: FtStatusDetail -2 (unrecognized); a
 * wrong size: -3 (malformed); the old firmware is kept either way.
 */

/** A firmware file for the emulator: the header line, then `body`. */
export function firmwareImage(version: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`DAFW ${version} ${body.length}\n`, 'latin1'), body]);
}

/** The version a file installs, or the FtStatusDetail it is refused with. */
export function checkFirmware(file: Buffer): { version: string } | { status: number } {
  const newline = file.subarray(0, 64).indexOf(0x0a);
  const header = /^DAFW (\d{1,3})\.(\d{1,3})\.(\d{1,3}) (\d{1,9})$/.exec(newline < 0 ? '' : file.subarray(0, newline).toString('latin1'));
  if (!header || header.slice(1, 4).some((n) => Number(n) > 255)) return { status: -2 };
  if (Number(header[4]) !== file.length - newline - 1) return { status: -3 };
  return { version: header.slice(1, 4).map(Number).join('.') };
}

/** osdp_PDID's three firmware bytes. */
export function firmwareBytes(version: string): number[] {
  return version.split('.').map((n) => Number(n) & 0xff);
}

export interface FileReply {
  /** osdp_FTSTAT's data, or a NAK's (code 0x41). */
  code: number;
  data: number[];
  /** It installed the file: it restarts once this reply is out. */
  restart?: boolean;
}

/** One osdp_FILETRANSFER: the reply, or null when the reader drops off the line (dropLineAfterBytes). */
export function receiveFragment(reader: EmulatedReader, data: Buffer, now: number): FileReply | null {
  if (data.length < 11) return { code: 0x41, data: [0x02] };
  const total = data.readUInt32LE(1);
  const offset = data.readUInt32LE(5);
  const length = data.readUInt16LE(9);
  if (data.length !== 11 + length) return { code: 0x41, data: [0x02] };
  let upload = reader.upload;
  if (!upload) {
    if (offset !== 0 || length === 0 || total === 0) return stat(reader, null, -1, now);
    upload = { total, data: Buffer.alloc(total), got: 0, finishingUntil: null, notBefore: now };
    reader.upload = upload;
  }
  if (length > 0) {
    reader.fragments.push(length);
    if (now < upload.notBefore) reader.earlyFragments++;
    if (total !== upload.total || offset !== upload.got || offset + length > upload.total) {
      reader.upload = null;
      return stat(reader, null, -3, now);
    }
    data.copy(upload.data, offset, 11);
    upload.got += length;
    if (reader.dropLineAfterBytes !== null && upload.got >= reader.dropLineAfterBytes) {
      reader.silent = true;
      reader.upload = null;
      return null;
    }
    if (upload.got < upload.total) return stat(reader, upload, 0, now);
    if (reader.ftFinishingMs > 0) {
      upload.finishingUntil = now + reader.ftFinishingMs;
      return stat(reader, upload, 3, now);
    }
    return install(reader, upload, now);
  }
  // An empty fragment: the control panel is still there (while the reader finishes).
  if (upload.got < upload.total) return stat(reader, upload, 0, now);
  if (upload.finishingUntil !== null && now < upload.finishingUntil) return stat(reader, upload, 3, now);
  return install(reader, upload, now);
}

function install(reader: EmulatedReader, upload: NonNullable<EmulatedReader['upload']>, now: number): FileReply {
  reader.upload = null;
  const verdict = checkFirmware(upload.data);
  if ('status' in verdict) return stat(reader, null, verdict.status, now);
  reader.installed.push(upload.data);
  reader.firmware = verdict.version;
  return Object.assign(stat(reader, null, 2, now), { restart: true });
}

/** osdp_FTSTAT: FtAction 1 (other commands may come between), FtDelay, FtStatusDetail, FtUpdateMsgMax. */
function stat(reader: EmulatedReader, upload: EmulatedReader['upload'], status: number, now: number): FileReply {
  const bytes = Buffer.alloc(7);
  bytes[0] = 0x01;
  bytes.writeUInt16LE(reader.ftDelayMs, 1);
  bytes.writeInt16LE(status, 3);
  bytes.writeUInt16LE(reader.ftUpdateMsgMax, 5);
  if (upload) upload.notBefore = now + reader.ftDelayMs;
  return { code: 0x7a, data: [...bytes] };
}
