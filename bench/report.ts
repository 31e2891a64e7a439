import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

/**
 * V8 heap cap the agent runs with on a Pi-class board (systemd unit: Environment=NODE_OPTIONS=...); benchmark
 * phases that stand for the agent run with the same, so their peak RSS is the deployed one.
 */
export const AGENT_NODE_OPTIONS = ['--max-old-space-size=64'];

export interface BenchRow {
  bench: string;
  metric: string;
  value: number;
  unit: string;
  /** The same operation without door-agent's work, measured in the same run. */
  floor: number | null;
  floorLabel: string;
  ratio: number | null;
  target: string;
  /** null when the row has no target of its own. */
  met: boolean | null;
}

const fmt = (n: number | null) => (n === null ? '' : Math.abs(n) >= 1000 ? Math.round(n).toLocaleString('en-US') : n >= 100 ? n.toFixed(0) : n.toFixed(2));

export function renderTable(rows: readonly BenchRow[]): string {
  const header = ['bench', 'figure', 'value', 'floor', 'ratio', 'target', 'met'];
  const body = rows.map((r) => [
    r.bench,
    r.metric,
    `${fmt(r.value)} ${r.unit}`,
    r.floor === null ? '' : `${fmt(r.floor)} (${r.floorLabel})`,
    r.ratio === null ? '' : `${r.ratio.toFixed(2)}x`,
    r.target,
    r.met === null ? '' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/** Writes bench/results.json, replacing the rows of the benches that ran and keeping the others. */
export function writeResults(file: string, rows: readonly BenchRow[]): void {
  const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { rows?: BenchRow[] }) : {};
  const ran = new Set(rows.map((r) => r.bench));
  const kept = (previous.rows ?? []).filter((r) => !ran.has(r.bench));
  const machine = { cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version };
  writeFileSync(file, `${JSON.stringify({ generatedAt: new Date().toISOString(), machine, rows: [...kept, ...rows] }, null, 2)}\n`);
}
