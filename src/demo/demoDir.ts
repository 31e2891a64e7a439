import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError } from '../util/errors.js';

/** The file that marks a directory as the demo's own: only such a directory is ever emptied. @internal */
export const DEMO_MARKER = '.door-agent-demo';

interface Marker {
  writtenBy: string;
  pid: number;
  /** The process's start time (Linux /proc), so a pid reused by another program is not taken for the demo. */
  processStart: string | null;
  startedAt: string;
}

/** A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or null where there is no /proc. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing parenthesis.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(marker: Marker): boolean {
  try {
    process.kill(marker.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = processStart(marker.pid);
  return marker.processStart === null || start === null || start === marker.processStart;
}

/** What a demo directory holds, as demos before the marker left it. */
const EARLIER_DEMO = new Set(['agent', 'service', 'gpio', 'demo.log']);

/** Written by the demo but unreadable (cut short): still the demo's, naming no running demo. */
const NOBODY: Marker = { writtenBy: 'door-agent demo', pid: 0, processStart: null, startedAt: '' };

function readMarker(path: string): Marker | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<Marker>;
    return typeof parsed.pid === 'number' ? (parsed as Marker) : NOBODY;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : NOBODY;
  }
}

/**
 * Makes `dir` the demo's fresh data directory, for this process, or refuses touching nothing. The demo only
 * empties a directory that is absent, empty, or carries its marker (written when the demo first used it), and
 * never one a running demo uses. The directory itself is kept: only what is inside goes, but for the entries
 * `keep` names (a config file a person changed).
 */
export function claimDemoDir(dir: string, now: Date, keep: (entry: string) => boolean = () => false): void {
  const markerPath = join(dir, DEMO_MARKER);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) {
      throw new DoorAgentError(
        `demo: ${dir} exists and is not a directory; nothing was touched. Give the demo another place: door-agent demo --dir <new or empty directory>`,
      );
    }
    const entries = readdirSync(dir);
    if (entries.length > 0) {
      const marker = readMarker(markerPath);
      if (marker === null) {
        // A demo before the marker left these same names: say so, and leave the removal to the person.
        const earlier = entries.every((e) => EARLIER_DEMO.has(e))
          ? ` If it is an earlier demo's directory, remove it yourself (rm -r ${dir}) and start again.`
          : '';
        throw new DoorAgentError(
          `demo: ${dir} is not empty and was not made by the demo (it has no ${DEMO_MARKER} file), so the demo will not reset it; nothing was touched. ` +
            `Give the demo another place: door-agent demo --dir <new or empty directory> (or DOOR_AGENT_DEMO_DIR).${earlier}`,
        );
      }
      if (marker.pid !== process.pid && marker.pid > 0 && alive(marker)) {
        throw new DoorAgentError(
          `demo: ${dir} is in use by a running demo (pid ${marker.pid}, started ${marker.startedAt}); nothing was touched. ` +
            `Stop that one first (Ctrl-C in its terminal, or kill ${marker.pid}), or start another with --dir <other directory>`,
        );
      }
      // Ours, and no demo runs on it: the marker goes last, so an interrupted reset is still recognized as ours.
      for (const entry of entries) if (entry !== DEMO_MARKER && !keep(entry)) rmSync(join(dir, entry), { recursive: true, force: true });
    }
  } else {
    mkdirSync(dir, { recursive: true });
  }
  writeMarker(markerPath, now);
}

/** Writes this process's marker through a renamed temporary file, so a second demo never reads half of one. */
function writeMarker(markerPath: string, now: Date): void {
  const marker: Marker = { writtenBy: 'door-agent demo', pid: process.pid, processStart: processStart(process.pid), startedAt: now.toISOString() };
  const temporary = `${markerPath}.${process.pid}`;
  writeFileSync(temporary, `${JSON.stringify(marker)}\n`);
  renameSync(temporary, markerPath);
}
