import { readSync } from 'node:fs';

/** A structural problem in a JSON file, located by its byte offset. */
export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly byteOffset: number,
  ) {
    super(`${message} at byte ${byteOffset}`);
    this.name = 'JsonSyntaxError';
  }
}

/** Where the bytes come from: fills `buf` from its start, returns how many (0 at the end). */
export type ByteSource = (buf: Buffer) => number;

/** The bytes of an open file, read from where it stands. */
function fileSource(fd: number): ByteSource {
  return (buf) => readSync(fd, buf, 0, buf.length, null);
}

export type StreamedMember =
  | { kind: 'element'; section: string; index: number; raw: string; byteOffset: number }
  | { kind: 'entry'; section: string; key: string; raw: string; byteOffset: number }
  | { kind: 'value'; section: string; raw: string; byteOffset: number }
  /** A streamed array or object begins (so an empty one is still seen). */
  | { kind: 'start'; section: string; byteOffset: number };

export type StreamedElement = Extract<StreamedMember, { kind: 'element' }>;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const EOF = -1;

function isWhitespace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function show(b: number): string {
  if (b === EOF) return 'end of file';
  return b >= 0x20 && b < 0x7f ? `'${String.fromCharCode(b)}'` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}

/**
 * Reads one top-level JSON object (or array) from a file or any other byte source in chunks, yielding the elements of the array members and the
 * entries of the object members named by the caller one at a time as raw JSON text, so a snapshot of any size
 * is validated and applied with bounded memory. Other members are yielded whole. Structure is checked here;
 * each yielded text still has to pass JSON.parse.
 */
export class JsonMemberStream {
  private readonly buf: Buffer;
  private pos = 0;
  private end = 0;
  private consumed = 0; // file bytes before buf[0]

  private readonly source: ByteSource;

  constructor(
    source: number | ByteSource,
    private readonly options: { arrays: ReadonlySet<string>; objects: ReadonlySet<string>; maxValueBytes: number },
    chunkBytes = 1 << 20,
  ) {
    this.buf = Buffer.allocUnsafe(chunkBytes);
    this.source = typeof source === 'number' ? fileSource(source) : source;
  }

  private offset(): number {
    return this.consumed + this.pos;
  }

  private refill(): boolean {
    this.consumed += this.end;
    this.pos = 0;
    this.end = this.source(this.buf);
    return this.end > 0;
  }

  private peek(): number {
    if (this.pos >= this.end && !this.refill()) return EOF;
    return this.buf[this.pos]!;
  }

  private skipWhitespace(): number {
    for (;;) {
      const b = this.peek();
      if (b === EOF || !isWhitespace(b)) return b;
      this.pos++;
    }
  }

  private expect(byte: number, what: string): void {
    const b = this.skipWhitespace();
    if (b !== byte) this.fail(`expected ${what}, found ${show(b)}`);
    this.pos++;
  }

  private fail(message: string): never {
    if (this.peek() === EOF) throw new JsonSyntaxError('the file ends early (truncated?)', this.offset());
    throw new JsonSyntaxError(message, this.offset());
  }

  /** Captures the bytes of one JSON value (object, array, string or scalar) without interpreting it. */
  private captureValue(): { raw: string; byteOffset: number } {
    const first = this.skipWhitespace();
    const byteOffset = this.offset();
    if (first === EOF) this.fail('expected a value');
    if (first === CLOSE_ARR || first === CLOSE_OBJ || first === COMMA || first === COLON) {
      this.fail(`expected a value, found ${show(first)}`);
    }
    const parts: Buffer[] = [];
    let size = 0;
    let depth = 0;
    let inString = false;
    let escaped = false;
    const scalar = first !== OPEN_OBJ && first !== OPEN_ARR && first !== QUOTE;
    let start = this.pos;
    let done = false;
    while (!done) {
      if (this.pos >= this.end) {
        const piece = this.buf.subarray(start, this.end);
        size += piece.length;
        parts.push(Buffer.from(piece));
        if (size > this.options.maxValueBytes) {
          throw new JsonSyntaxError(`a value larger than ${this.options.maxValueBytes} bytes`, byteOffset);
        }
        if (!this.refill()) {
          if (scalar) break;
          throw new JsonSyntaxError('the file ends in the middle of a value (truncated?)', this.offset());
        }
        start = 0;
      }
      const buf = this.buf;
      const end = this.end;
      let i = this.pos;
      if (scalar) {
        while (i < end) {
          const b = buf[i]!;
          if (b === COMMA || b === CLOSE_ARR || b === CLOSE_OBJ || isWhitespace(b)) {
            done = true;
            break;
          }
          i++;
        }
      } else {
        for (; i < end; i++) {
          const b = buf[i]!;
          if (inString) {
            if (escaped) escaped = false;
            else if (b === BACKSLASH) escaped = true;
            else if (b === QUOTE) {
              inString = false;
              if (depth === 0) {
                i++;
                done = true;
                break;
              }
            }
          } else if (b === QUOTE) inString = true;
          else if (b === OPEN_OBJ || b === OPEN_ARR) depth++;
          else if (b === CLOSE_OBJ || b === CLOSE_ARR) {
            depth--;
            if (depth === 0) {
              i++;
              done = true;
              break;
            }
          }
        }
      }
      this.pos = i;
    }
    const last = this.buf.subarray(start, this.pos);
    size += last.length;
    if (size > this.options.maxValueBytes) {
      throw new JsonSyntaxError(`a value larger than ${this.options.maxValueBytes} bytes`, byteOffset);
    }
    const raw = parts.length === 0 ? last.toString('utf8') : Buffer.concat([...parts, last]).toString('utf8');
    return { raw, byteOffset };
  }

  private readKey(): string {
    const b = this.skipWhitespace();
    if (b !== QUOTE) this.fail(`expected a member name in quotes, found ${show(b)}`);
    const { raw, byteOffset } = this.captureValue();
    try {
      return JSON.parse(raw) as string;
    } catch {
      throw new JsonSyntaxError('a malformed member name', byteOffset);
    }
  }

  /** Yields the members of the top-level object; throws JsonSyntaxError on broken structure. */
  *members(): Generator<StreamedMember> {
    const first = this.skipWhitespace();
    if (first !== OPEN_OBJ) this.fail(`expected a JSON object, found ${show(first)}`);
    this.pos++;
    if (this.skipWhitespace() === CLOSE_OBJ) {
      this.pos++;
    } else {
      for (;;) {
        const section = this.readKey();
        this.expect(COLON, "':'");
        const next = this.skipWhitespace();
        if (this.options.arrays.has(section) && next === OPEN_ARR) {
          yield { kind: 'start', section, byteOffset: this.offset() };
          yield* this.arrayElements(section);
        } else if (this.options.objects.has(section) && next === OPEN_OBJ) {
          yield { kind: 'start', section, byteOffset: this.offset() };
          yield* this.objectEntries(section);
        } else yield { kind: 'value', section, ...this.captureValue() };
        const sep = this.skipWhitespace();
        this.pos++;
        if (sep === CLOSE_OBJ) break;
        if (sep !== COMMA) {
          this.pos--;
          this.fail(`expected ',' or '}' after member "${section}", found ${show(sep)}`);
        }
      }
    }
    const trailing = this.skipWhitespace();
    if (trailing !== EOF) this.fail(`unexpected ${show(trailing)} after the end of the top-level object`);
  }

  /** Yields the elements of a top-level array (an HTTP list answer), named `section`. */
  *elements(section: string): Generator<StreamedElement> {
    const first = this.skipWhitespace();
    if (first !== OPEN_ARR) this.fail(`expected a JSON array, found ${show(first)}`);
    yield* this.arrayElements(section);
    const trailing = this.skipWhitespace();
    if (trailing !== EOF) this.fail(`unexpected ${show(trailing)} after the end of the top-level array`);
  }

  private *arrayElements(section: string): Generator<StreamedElement> {
    this.pos++; // '['
    if (this.skipWhitespace() === CLOSE_ARR) {
      this.pos++;
      return;
    }
    for (let index = 0; ; index++) {
      yield { kind: 'element', section, index, ...this.captureValue() };
      const sep = this.skipWhitespace();
      if (sep === CLOSE_ARR) {
        this.pos++;
        return;
      }
      if (sep !== COMMA) this.fail(`expected ',' or ']' in "${section}", found ${show(sep)}`);
      this.pos++;
    }
  }

  private *objectEntries(section: string): Generator<StreamedMember> {
    this.pos++; // '{'
    if (this.skipWhitespace() === CLOSE_OBJ) {
      this.pos++;
      return;
    }
    for (;;) {
      const key = this.readKey();
      this.expect(COLON, "':'");
      yield { kind: 'entry', section, key, ...this.captureValue() };
      const sep = this.skipWhitespace();
      if (sep === CLOSE_OBJ) {
        this.pos++;
        return;
      }
      if (sep !== COMMA) this.fail(`expected ',' or '}' in "${section}", found ${show(sep)}`);
      this.pos++;
    }
  }
}
