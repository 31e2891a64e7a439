import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/cli.js';

// The repository must stand alone: a clone has no shared folder beside it and no design document, so no tracked doc,
// comment or config may send a reader there. (The patterns are built from pieces so this file does not match.)
const FORBIDDEN: Array<[RegExp, string]> = [
  [new RegExp(['\\.\\.', '/shared'].join(''), 'i'), 'a path outside the repository (the shared folder)'],
  [new RegExp(['design', '\\s+section'].join(''), 'i'), 'a section of a design document the repository does not have'],
  [new RegExp(['section\\s+\\d+\\s+of\\s+the', '\\s+design'].join(''), 'i'), 'a section of a design document the repository does not have'],
  [new RegExp(['\\bdesign', '\\.md\\b'].join(''), 'i'), 'a design document the repository does not have'],
];
const TEXT = /\.(ts|mts|cts|js|mjs|cjs|md|ya?ml|json|sh|service|timer|txt|conf)$|(^|\/)[^./]+$/;

function trackedTextFiles(): string[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  return files.filter((f) => TEXT.test(f) && !f.endsWith('package-lock.json'));
}

describe('the repository stands alone', () => {
  it('no tracked doc, source, script or config refers to a folder outside the repository or to a design document it does not hold', () => {
    const files = trackedTextFiles();
    // The check reads the repository's own files: README, docs, src, test, bench, scripts, config, systemd.
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/reference-service.md', 'src/cli.ts']));
    const problems: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        continue; // listed but absent in this checkout
      }
      text.split('\n').forEach((line, i) => {
        for (const [pattern, what] of FORBIDDEN) {
          if (pattern.test(line)) problems.push(`${file}:${i + 1}: ${what}: ${line.trim().slice(0, 120)}`);
        }
      });
    }
    expect(problems, 'name the repository document that covers it instead (docs/*.md, README.md)').toEqual([]);
  });

  it('the API document the reference service implements is in the repository and linked', () => {
    const api = readFileSync(join(ROOT, 'docs/access-control-api.md'), 'utf8');
    expect(api).toContain('## Authentication');
    expect(readFileSync(join(ROOT, 'docs/reference-service.md'), 'utf8')).toContain('](access-control-api.md)');
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('](docs/access-control-api.md)');
  });
});
