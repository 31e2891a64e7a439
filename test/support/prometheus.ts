import { rawGet } from './net.js';
import { sleep } from './wait.js';

/** One sample of the Prometheus text format: `name{label="value",...} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** Each family's TYPE (counter, gauge, histogram, ...). */
  types: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

/** As Prometheus reads a value (Go's ParseFloat): NaN and Inf in any case (prom-client writes an empty histogram's mean as Nan). */
function parseValue(text: string, line: string): number {
  const word = text.toLowerCase();
  if (word === '+inf' || word === 'inf') return Number.POSITIVE_INFINITY;
  if (word === '-inf') return Number.NEGATIVE_INFINITY;
  if (word === 'nan') return Number.NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`not a sample value: ${line}`);
  return value;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (!match) throw new Error(`malformed labels: ${line}`);
    labels[match[1]!] = match[2]!.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/**
 * The Prometheus text exposition format (version 0.0.4), strictly: every line a comment (HELP, TYPE) or a sample
 * of a family whose TYPE came first, every value a number; a histogram's buckets cumulative up to +Inf, which
 * equals its _count. Throws on the first line that is not so.
 */
function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const [, keyword, name, rest] = line.match(/^# (HELP|TYPE) (\S+) ?(.*)$/) ?? [];
      if (!keyword) throw new Error(`malformed comment: ${line}`);
      if (keyword === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest!)) throw new Error(`unknown type: ${line}`);
        types.set(name!, rest!);
      }
      continue;
    }
    const match = line.match(SAMPLE);
    if (!match) throw new Error(`malformed sample: ${line}`);
    const name = match[1]!;
    const family = types.has(name) ? name : SUFFIXES.map((s) => (name.endsWith(s) ? name.slice(0, -s.length) : '')).find((f) => types.has(f));
    if (!family) throw new Error(`a sample before its TYPE: ${line}`);
    samples.push({ name, labels: match[2] ? parseLabels(match[2], line) : {}, value: parseValue(match[3]!, line) });
  }
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, number[]>();
    for (const s of samples.filter((s) => s.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s.value]);
      if (le === '+Inf') {
        const count = samples.find((c) => c.name === `${family}_count` && JSON.stringify(c.labels) === key);
        if (count?.value !== s.value) throw new Error(`${family}${key}: the +Inf bucket is not the _count`);
      }
    }
    for (const [key, counts] of series) {
      if (counts.some((c, i) => i > 0 && c < counts[i - 1]!)) throw new Error(`${family}${key}: buckets not cumulative`);
    }
  }
  return { types, samples };
}

/** GET /metrics on loopback, checked for its status and content type, parsed. */
export async function scrape(port: number): Promise<{ text: string; exposition: Exposition }> {
  const answer = await rawGet(port, '/metrics');
  if (answer.status !== 200) throw new Error(`GET /metrics answered ${answer.status}: ${answer.body.toString()}`);
  if (!String(answer.headers['content-type']).startsWith('text/plain; version=0.0.4')) throw new Error(`content type ${answer.headers['content-type']}`);
  const text = answer.body.toString('utf8');
  return { text, exposition: parseExposition(text) };
}

/** Scrapes until `done` holds (a daemon decides a tap a little after the line is written, a sync takes a while). */
export async function scrapeUntil(
  port: number,
  done: (e: Exposition) => boolean,
  what: string,
  timeoutMs = 15_000,
): Promise<{ text: string; exposition: Exposition }> {
  const started = Date.now();
  for (;;) {
    const scraped = await scrape(port);
    if (done(scraped.exposition)) return scraped;
    if (Date.now() - started > timeoutMs) throw new Error(`${what} not seen within ${timeoutMs} ms:\n${scraped.text}`);
    await sleep(50);
  }
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(exposition: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = exposition.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/**
 * Every label value of the samples whose name starts with `prefix`, but a bucket's bound (le, quantile): where a
 * leaked identity would show.
 */
export function labelValues(exposition: Exposition, prefix = ''): string[] {
  return exposition.samples
    .filter((s) => s.name.startsWith(prefix))
    .flatMap((s) => Object.entries(s.labels).flatMap(([name, value]) => (name === 'le' || name === 'quantile' ? [] : [value])));
}
