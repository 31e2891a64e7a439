import { DoorAgentError } from '../../util/errors.js';

/**
 * A tar stream read as it comes (POSIX ustar, with GNU long names and pax headers, as GNU tar writes them): each
 * entry's header, then its data in pieces, then its end. Nothing is written here: the caller decides what an entry
 * may be (update/unpack.ts). A header whose checksum is wrong, or a stream that ends inside an entry or without
 * the end-of-archive blocks, is an error naming where.
 */

const BLOCK = 512;
/** A GNU long name or a pax header longer than this is not one a program bundle has. */
const MAX_META_BYTES = 64 * 1024;

export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'device' | 'fifo' | 'unsupported';

export interface TarEntry {
  /** As the archive names it (a leading `./` kept). */
  path: string;
  type: TarEntryType;
  /** The header's type flag, for messages (`3`: a character device, `S`: a sparse file, ...). */
  flag: string;
  mode: number;
  size: number;
  /** A link's target (symlink: as written; hardlink: a path in the archive). */
  linkTarget: string;
}

export interface TarHandler {
  entry(entry: TarEntry): void;
  data(chunk: Buffer): void;
  entryEnd(): void;
}

/** Not a tar archive, or a damaged or truncated one. */
export class TarError extends DoorAgentError {
  constructor(message: string) {
    super(message);
    this.name = 'TarError';
  }
}

const TYPES: Record<string, TarEntryType> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'device',
  '4': 'device',
  '5': 'directory',
  '6': 'fifo',
};

function cString(block: Buffer, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? field.length : end).toString('utf8');
}

/** An octal field, or GNU's base-256 form for large numbers (the first byte's high bit set). */
function numberField(block: Buffer, start: number, length: number): number {
  const field = block.subarray(start, start + length);
  if ((field[0]! & 0x80) !== 0) {
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    return value;
  }
  const text = cString(block, start, length).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarError(`not a tar archive: a header field reads ${JSON.stringify(text)}`);
  return Number.parseInt(text, 8);
}

function checksumMatches(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return numberField(block, 148, 8) === sum;
}

/** pax extended header records: `<length> <key>=<value>\n`. */
function paxRecords(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let offset = 0;
  while (offset < data.length) {
    const space = data.indexOf(0x20, offset);
    const length = space === -1 ? Number.NaN : Number(data.subarray(offset, space).toString('ascii'));
    if (!Number.isInteger(length) || length <= 0 || offset + length > data.length) throw new TarError('a pax header of the archive is malformed');
    const record = data.subarray(space + 1, offset + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1));
    offset += length;
  }
  return records;
}

export class TarParser {
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes of the current entry's data still to come, then the padding to the next block. */
  private remaining = 0;
  private padding = 0;
  private current: TarEntry | null = null;
  /** A GNU long name / link name or a pax header being collected, applied to the next entry. */
  private meta: { kind: 'L' | 'K' | 'x' | 'g'; chunks: Buffer[] } | null = null;
  private longName: string | null = null;
  private longLink: string | null = null;
  private pax = new Map<string, string>();
  private zeroBlocks = 0;
  private ended = false;
  private entriesSeen = 0;

  constructor(private readonly handler: TarHandler) {}

  write(chunk: Buffer): void {
    if (this.ended) return; // GNU tar pads the archive with zeros to its record size
    const buffer = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    let at = 0;
    while (!this.ended) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, buffer.length - at);
        if (take === 0) break;
        const part = buffer.subarray(at, at + take);
        if (this.meta) this.collect(part);
        else this.handler.data(part);
        at += take;
        this.remaining -= take;
        if (this.remaining === 0) this.dataEnd();
        continue;
      }
      if (this.padding > 0) {
        const skip = Math.min(this.padding, buffer.length - at);
        if (skip === 0) break;
        at += skip;
        this.padding -= skip;
        continue;
      }
      if (buffer.length - at < BLOCK) break;
      this.header(buffer.subarray(at, at + BLOCK));
      at += BLOCK;
    }
    this.pending = Buffer.from(buffer.subarray(at));
  }

  /** The stream's end: an error when it ends inside an entry or before the end-of-archive blocks. */
  end(): void {
    if (this.ended) return;
    const inside = this.current;
    if (inside && this.remaining > 0)
      throw new TarError(`the archive ends inside ${inside.path} (${this.remaining} of its ${inside.size} bytes missing): it is truncated`);
    throw new TarError('the archive ends without its end-of-archive blocks: it is truncated');
  }

  private header(block: Buffer): void {
    if (block.every((b) => b === 0)) {
      this.zeroBlocks++;
      if (this.zeroBlocks >= 2) this.ended = true;
      return;
    }
    if (this.zeroBlocks > 0) throw new TarError('the archive has an entry after an empty block: it is damaged');
    if (!checksumMatches(block)) throw new TarError(`not a tar archive, or a damaged one: a header's checksum is wrong (at entry ${this.entriesSeen + 1})`);
    this.entriesSeen++;
    const flag = String.fromCharCode(block[156]!);
    const size = numberField(block, 124, 12);
    if (flag === 'L' || flag === 'K' || flag === 'x' || flag === 'g') {
      if (size > MAX_META_BYTES) throw new TarError(`a ${flag === 'x' || flag === 'g' ? 'pax header' : 'long name'} of ${size} bytes: not a program bundle`);
      this.meta = { kind: flag, chunks: [] };
      this.startData(size);
      return;
    }
    const magic = block.subarray(257, 263).toString('latin1');
    const prefix = magic === 'ustar\0' ? cString(block, 345, 155) : '';
    const name = cString(block, 0, 100);
    const path = this.pax.get('path') ?? this.longName ?? (prefix ? `${prefix}/${name}` : name);
    const linkTarget = this.pax.get('linkpath') ?? this.longLink ?? cString(block, 157, 100);
    const paxSize = this.pax.get('size');
    const entry: TarEntry = {
      path,
      type: TYPES[flag] ?? 'unsupported',
      flag,
      mode: numberField(block, 100, 8) & 0o7777,
      size: paxSize === undefined ? size : Number(paxSize),
      linkTarget,
    };
    this.longName = null;
    this.longLink = null;
    this.pax = new Map();
    // Only a file's size is data: a link or directory that claims bytes has none (as GNU tar reads it).
    const dataBytes = entry.type === 'file' ? entry.size : 0;
    if (!Number.isSafeInteger(dataBytes) || dataBytes < 0) throw new TarError(`${path}: its size is not a number of bytes`);
    this.current = entry;
    this.handler.entry(entry);
    this.startData(dataBytes);
  }

  private startData(bytes: number): void {
    this.remaining = bytes;
    this.padding = (BLOCK - (bytes % BLOCK)) % BLOCK;
    if (bytes === 0) this.dataEnd();
  }

  private collect(part: Buffer): void {
    this.meta!.chunks.push(part);
  }

  private dataEnd(): void {
    if (this.meta) {
      const data = Buffer.concat(this.meta.chunks);
      const kind = this.meta.kind;
      this.meta = null;
      if (kind === 'L') this.longName = cString(data, 0, data.length);
      else if (kind === 'K') this.longLink = cString(data, 0, data.length);
      else if (kind === 'x') this.pax = paxRecords(data);
      // 'g' (global pax settings): nothing of a program bundle depends on them
      return;
    }
    this.current = null;
    this.handler.entryEnd();
  }
}
