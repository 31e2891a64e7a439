import type { AgentOptions } from '../config/options.js';
import { directoryRules, findingsWarnings, type DirectoryFindings } from '../core/directoryFindings.js';
import type { Db } from '../store/database.js';
import { scanDirectory } from '../store/directoryScan.js';

/**
 * What `status`, `config check`, `import` and `sync` show of the cache's directory: short cards, malformed and
 * ambiguous printed cards, duress collisions, short PINs (issues 32, 27).
 */
export function directoryFindings(config: AgentOptions, cache: Db): DirectoryFindings {
  return scanDirectory(cache, directoryRules(config.access, config.doors));
}

/** The warnings for people, one line each; none when the directory is clean. */
export function directoryLines(findings: DirectoryFindings, indent = ''): string[] {
  return findingsWarnings(findings).map((w) => `${indent}WARNING: ${w}`);
}
