import type * as z from 'zod';

/** One problem found in an input, located by a path an operator can follow (`doors[0].relay.pin`). */
export interface Problem {
  path: string;
  message: string;
}

/** Renders a zod path as `a.b[0].c`; `root` is prefixed (e.g. `$` for JSON paths). */
export function formatPath(path: ReadonlyArray<PropertyKey>, root = ''): string {
  let out = root;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out === '' ? '(top level)' : out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return '';
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) {
    return `required (expected ${issue.expected === 'int' ? 'integer' : issue.expected})`;
  }
  return issue.message
    .replace(/^Invalid input: /, '')
    .replace(/expected int\b/, 'expected integer')
    .replace(/^Invalid option: expected one of/, 'expected one of');
}

/** The problems of zod issues on one line, `path: message; path: message` (a refusal, an error body). */
export function problemsInOneLine(issues: ReadonlyArray<z.core.$ZodIssue>): string {
  return problemsFromZod(issues)
    .map((p) => `${p.path}: ${p.message}`)
    .join('; ');
}

/** Flattens zod issues into problems; unknown keys become one problem per key, at the key's own path. */
export function problemsFromZod(issues: ReadonlyArray<z.core.$ZodIssue>, basePath: ReadonlyArray<PropertyKey> = [], root = ''): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = [...basePath, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push({ path: formatPath([...path, key], root), message: 'unknown key' });
    } else if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // Report the branch that got furthest rather than "invalid input".
      const best = issue.errors.reduce((a, b) => (deepest(b) > deepest(a) ? b : a));
      problems.push(...problemsFromZod(best, path, root));
    } else {
      problems.push({ path: formatPath(path, root), message: describeIssue(issue) });
    }
  }
  return problems;
}

function deepest(issues: ReadonlyArray<z.core.$ZodIssue>): number {
  return Math.max(0, ...issues.map((i) => i.path.length));
}

export function renderProblems(problems: ReadonlyArray<Problem>, limit = 50): string {
  const lines = problems.slice(0, limit).map((p) => `  ${p.path}: ${p.message}`);
  if (problems.length > limit) lines.push(`  ... and ${problems.length - limit} more`);
  return lines.join('\n');
}
