import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
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

/** The manuals as a reader finds them in the tree (new pages too, before git knows them). */
function manuals(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
    );
  const bench = readdirSync(join(ROOT, 'bench')).filter((f) => f.endsWith('.md'));
  return ['README.md', ...walk('docs'), ...bench.map((f) => join('bench', f))];
}

/** Lines outside fenced code blocks, with their numbers. */
function prose(text: string): Array<[number, string]> {
  let fence = false;
  const out: Array<[number, string]> = [];
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fence = !fence;
    else if (!fence) out.push([i + 1, line]);
  });
  return out;
}

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, line] of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading?.[1]) continue;
    const base = heading[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
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

  it('every relative link of the README, the manuals and the bench pages leads to a file, and to a heading it names', () => {
    const problems: string[] = [];
    for (const file of manuals()) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const [n, line] of prose(text)) {
        for (const match of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          const link = match[1] ?? '';
          if (/^[a-z]+:/.test(link)) continue; // https:, mailto:
          const [path = '', anchor] = link.split('#');
          const target = path === '' ? file : normalize(join(dirname(file), path));
          if (!existsSync(join(ROOT, target))) problems.push(`${file}:${n}: ${link}: there is no ${target}`);
          else if (anchor !== undefined && target.endsWith('.md') && !anchors(readFileSync(join(ROOT, target), 'utf8')).has(anchor)) {
            problems.push(`${file}:${n}: ${link}: ${target} has no heading #${anchor}`);
          }
        }
      }
    }
    expect(problems, 'fix the link, or the heading it names (a moved section: link its new page)').toEqual([]);
  });

  it('the README is a front door: short, naming the test command and the index, which names every manual', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length, 'the reference belongs in docs/ (docs/README.md is its index)').toBeLessThan(250);
    expect(readme).toContain('npm test'); // .ci/run runs the README's test command
    expect(readme).toContain('](docs/README.md)');
    const index = readFileSync(join(ROOT, 'docs/README.md'), 'utf8');
    const pages = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md');
    expect(
      pages.filter((page) => !index.includes(`](${page})`)),
      'each page of docs/ has its line in docs/README.md',
    ).toEqual([]);
    expect(index).toContain('](../bench/README.md)');
    expect(index).toContain('](../bench/HISTORY.md)');
  });
});
