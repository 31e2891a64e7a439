import { appendFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_CONFIG, changedByHand, placeAgentConfig } from '../../src/demo/agentConfigFile.js';
import { cliCommand } from '../../src/demo/cliCommand.js';
import { claimDemoDir } from '../../src/demo/demoDir.js';
import { CLI, tempDir } from '../support/cli.js';

// The demo's agent config is a file in its directory (the status and events lines it prints read it). It is the
// demo's, rewritten at each start, until a person changes it: then it is theirs, kept through the reset.
const tmp = tempDir('door-agent-demo-config-');
afterAll(() => tmp.cleanup());

const body = (port: number) => `agent: { id: demo, dataDir: "/demo/agent" }\nmqtt: { url: "mqtt://127.0.0.1:${port}" }\n`;
/** A start of the demo as far as its config: the directory claimed (reset), then the config placed. */
function start(dir: string, port: number) {
  claimDemoDir(dir, new Date(), (entry) => changedByHand(dir, entry));
  return placeAgentConfig(dir, body(port));
}

describe("the demo's agent config file", () => {
  it('is written at each start with what this start uses (the ports it took), and rewritten at the next', () => {
    const dir = join(tmp.path, 'fresh');
    const first = start(dir, 1883);
    expect(first).toMatchObject({ path: join(dir, AGENT_CONFIG), kept: null });
    expect(readFileSync(first.path, 'utf8')).toBe(first.text);
    expect(first.text).toContain(body(1883));
    // The next start took another port (1883 was busy): its own file replaces the earlier demo's.
    const second = start(dir, 40001);
    expect(second).toMatchObject({ path: join(dir, AGENT_CONFIG), kept: null });
    expect(readFileSync(second.path, 'utf8')).toContain('mqtt://127.0.0.1:40001');
  });

  it("is never overwritten once a person changed it: kept through the reset, the demo's own written beside it", () => {
    const dir = join(tmp.path, 'changed');
    const path = start(dir, 1883).path;
    appendFileSync(path, 'doors: []   # mine\n');
    const mine = readFileSync(path, 'utf8');
    writeFileSync(join(dir, 'demo.log'), 'an earlier run');

    const next = start(dir, 1883);
    expect(readFileSync(path, 'utf8')).toBe(mine);
    expect(next).toMatchObject({ path: join(dir, 'agent.demo.yaml'), kept: path });
    expect(readFileSync(next.path, 'utf8')).toBe(next.text);
    // The rest of the directory is reset as before.
    expect(existsSync(join(dir, 'demo.log'))).toBe(false);
    // And again at the start after that: still kept.
    expect(start(dir, 1883).kept).toBe(path);
    expect(readFileSync(path, 'utf8')).toBe(mine);
  });
});

describe('the door-agent command the demo prints', () => {
  it('is `door-agent` when the door-agent on PATH is this one (installed or linked), else node and the built CLI', () => {
    const linked = join(tmp.path, 'bin-linked');
    mkdirSync(linked);
    symlinkSync(CLI, join(linked, 'door-agent'));
    const other = join(tmp.path, 'bin-other');
    mkdirSync(other);
    writeFileSync(join(other, 'door-agent'), '#!/bin/sh\n', { mode: 0o755 });

    expect(cliCommand(`/usr/bin:${linked}`)).toBe('door-agent');
    expect(cliCommand('/usr/bin:/bin')).toBe(`node ${CLI}`);
    expect(cliCommand(`${other}:/usr/bin`)).toBe(`node ${CLI}`);
    expect(cliCommand(undefined)).toBe(`node ${CLI}`);
  });
});
