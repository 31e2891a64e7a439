import { existsSync, readFileSync } from 'node:fs';

// dist/src/version.js -> ../../package.json; src/version.ts (in-process tests) -> ../package.json.
const manifest = [new URL('../../package.json', import.meta.url), new URL('../package.json', import.meta.url)].find(
  (url) => existsSync(url) && (JSON.parse(readFileSync(url, 'utf8')) as { name?: string }).name === 'door-agent',
);

/** door-agent's version, from its package.json. */
export const VERSION: string = manifest ? (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version : 'unknown';
