import type { AgentOptions } from '../config/options.js';
import { findingsWarnings, type DirectoryFindings } from '../core/directoryFindings.js';
import type { Db } from '../store/database.js';
import { scanDirectory } from '../store/directoryScan.js';

/** What `status` and `config check` show of the cache's directory: short cards and duress collisions (issue 32). */
export function directoryFindings(config: AgentOptions, cache: Db): DirectoryFindings {
  return scanDirectory(cache, config.access);
}

/** The warnings for people, one line each; none when the directory is clean. */
export function directoryLines(findings: DirectoryFindings, indent = ''): string[] {
  return findingsWarnings(findings).map((w) => `${indent}WARNING: ${w}`);
}
