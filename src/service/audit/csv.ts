/**
 * CSV as RFC 4180 writes it (CRLF line ends, a field with a comma, a quote or a line end in double quotes, a quote
 * doubled), with one guard for spreadsheets: a text field starting with = + - @ (or a tab or carriage return) is
 * prefixed with ' so that a spreadsheet shows it and never runs it as a formula (OWASP, "CSV Injection").
 */

export type CsvValue = string | number | null;

const NEEDS_QUOTES = /[",\r\n]/;
const FORMULA_START = /^[=+\-@\t\r]/;

/** One field: a number as written, null empty, a text guarded and quoted as it needs. */
function csvField(value: CsvValue): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record, its CRLF included. */
export function csvLine(values: readonly CsvValue[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}
