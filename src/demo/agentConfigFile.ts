import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The demo's agent config, in the demo's directory: what `door-agent status --config` and `events --config` read. @internal */
export const AGENT_CONFIG = 'agent.yaml';
/** Where the demo writes its own config when agent.yaml is a person's (changed by hand, so kept). */
const DEMO_OWN_CONFIG = 'agent.demo.yaml';

const digest = (body: string) => createHash('sha256').update(body).digest('hex').slice(0, 16);
/** The first line the demo writes: the digest of what follows tells its own file from one changed by hand. */
const HEADER = /^# door-agent demo's agent config \(sha256 ([0-9a-f]{16})\)[^\n]*\n/;

function withHeader(body: string): string {
  return `# door-agent demo's agent config (sha256 ${digest(body)}): rewritten at each start of the demo, unless you change it.\n${body}`;
}

/** The file as the demo wrote it: its header's digest matches what follows. */
function asWritten(text: string): boolean {
  const header = HEADER.exec(text);
  return header !== null && header[1] === digest(text.slice(header[0].length));
}

function readIfThere(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** For the demo directory's reset (claimDemoDir's keep): an agent.yaml changed by hand is a person's, and stays. */
export function changedByHand(dir: string, entry: string): boolean {
  if (entry !== AGENT_CONFIG) return false;
  const text = readIfThere(join(dir, entry));
  return text !== null && !asWritten(text);
}

/**
 * Writes the demo's agent config (`body`, YAML) into `dir` and says where: agent.yaml, unless a person changed
 * that one, which is then kept as it is (`kept`) and the demo's own goes beside it, in agent.demo.yaml.
 */
export function placeAgentConfig(dir: string, body: string): { path: string; text: string; kept: string | null } {
  const text = withHeader(body);
  const usual = join(dir, AGENT_CONFIG);
  const current = readIfThere(usual);
  const ours = current === null || current === text || asWritten(current);
  const path = ours ? usual : join(dir, DEMO_OWN_CONFIG);
  // Through a renamed temporary file: a status command reading it meanwhile sees the old file or the new one.
  const temporary = `${path}.${process.pid}`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
  return { path, text, kept: ours ? null : usual };
}
