/**
 * The `?` parameters of a statement written for both engines, numbered as PostgreSQL reads them (`$1`, `$2`, ...).
 * A `?` inside a quoted string, a quoted name or a comment is left alone.
 */
export function numberPlaceholders(text: string): string {
  let out = '';
  let n = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      const end = closingQuote(text, i, c);
      out += text.slice(i, end);
      i = end;
    } else if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '?') {
      n += 1;
      out += `$${n}`;
      i += 1;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

/** The index just past the quote that closes the one at `start` (a doubled quote is part of the text). */
function closingQuote(text: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === quote) {
      if (text[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += 1;
  }
  return text.length;
}
