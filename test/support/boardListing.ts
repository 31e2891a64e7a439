import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every file and directory under `dir`, with its mode: what a board holds after `door-agent enrol`. */
export function listing(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      const stat = statSync(path);
      out[relative(dir, path)] = (stat.mode & 0o777).toString(8);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(dir);
  return out;
}
