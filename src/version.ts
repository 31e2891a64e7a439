import { existsSync, readFileSync } from 'node:fs';

// dist/src/version.js -> ../../package.json; src/version.ts (in-process tests) -> ../package.json.
const manifest = [new URL('../../package.json', import.meta.url), new URL('../package.json', import.meta.url)]
  .filter((url) => existsSync(url))
  .map((url) => JSON.parse(readFileSync(url, 'utf8')) as { name?: string; version?: string; homepage?: unknown; repository?: unknown })
  .find((m) => m.name === 'door-agent');

/** door-agent's version, from its package.json. */
export const VERSION: string = manifest?.version ?? 'unknown';

/** The project's web address from its package.json (`homepage`, else `repository.url`), null when it names none. */
export const PROJECT_URL: string | null = projectUrl(manifest?.homepage, manifest?.repository);

function projectUrl(homepage: unknown, repository: unknown): string | null {
  if (typeof homepage === 'string' && /^https?:\/\//.test(homepage)) return homepage;
  const url = typeof repository === 'string' ? repository : (repository as { url?: unknown } | undefined)?.url;
  return typeof url === 'string' && /^(git\+)?https?:\/\//.test(url) ? url.replace(/^git\+/, '').replace(/\.git$/, '') : null;
}
