import { existsSync, readFileSync, renameSync } from 'node:fs';

/** The example the installer and the package copy to /etc/door-agent/config.yaml when there is none. */
const EXAMPLES = [new URL('../../config/door-agent.example.yaml', import.meta.url), new URL('../config/door-agent.example.yaml', import.meta.url)];

// The installer rewrites the first line (where its JSON Schema is): every other line is the example's.
const body = (text: string) => text.replace(/^# yaml-language-server:[^\n]*\n/, '');

/**
 * Whether `configFile` is the installer's example, untouched: nobody's configuration, which door-agent enrol may
 * set aside (never delete) before writing the board's own. Any edit makes it a person's file, which it refuses.
 */
export function isUntouchedExample(configFile: string, examples: readonly (URL | string)[] = EXAMPLES): boolean {
  const example = examples.find((e) => existsSync(e));
  if (example === undefined || !existsSync(configFile)) return false;
  return body(readFileSync(configFile, 'utf8')) === body(readFileSync(example, 'utf8'));
}

/** Renames the example beside itself (config.yaml.example, or .example.N when that is taken); returns its new name. */
export function setExampleAside(configFile: string): string {
  let aside = `${configFile}.example`;
  for (let n = 1; existsSync(aside); n++) aside = `${configFile}.example.${n}`;
  renameSync(configFile, aside);
  return aside;
}
