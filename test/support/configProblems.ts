import { parseConfig } from '../../src/config/load.js';
import { InputError } from '../../src/util/errors.js';

/** The problems parseConfig finds in a configuration text, as `path: message` lines (none: it is valid). */
export function configProblems(text: string): string[] {
  try {
    parseConfig(text, 'test.yaml');
  } catch (err) {
    if (err instanceof InputError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}
