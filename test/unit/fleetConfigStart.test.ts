import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../src/config/load.js';
import { keepAppliedConfig, readKeptConfig, type KeptConfig } from '../../src/fleet/appliedConfig.js';
import { signFleet } from '../../src/protocol/fleetSigning.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';

// docs/fleet.md, "At start": the board file with the applied version merged under it; else the previous one; else
// the board file alone, with the versions passed over and why. Each version checked as `config check` checks a file.

const tmp = tempDir('door-agent-fleet-start-');
afterAll(tmp.cleanup);
const service = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
let n = 0;

const document = (unlockSeconds: number, extra = '') => `access: { groups: [Staff] }
doors:
  - { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: ${unlockSeconds} }
${extra}`;

function signed(version: number, text: string, key = service.privateKey, agentId = 'lobby'): KeptConfig {
  const body = { agent_id: agentId, version, document: text, sha256: createHash('sha256').update(text, 'utf8').digest('hex') };
  return Object.assign(body, { signature: signFleet(key, 'config', body) });
}

/** A board of the fleet in a directory of its own: its file, its data directory. */
function board(): { path: string; dataDir: string } {
  const dir = join(tmp.path, `b${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'service.pub'), service.publicKey.export({ format: 'pem', type: 'spki' }));
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `agent: { id: lobby, dataDir: ${join(dir, 'data')}, timezone: UTC, controlSocket: null }
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio')} }
fleet: { servicePublicKeyFile: ${join(dir, 'service.pub')} }
`,
  );
  return { path, dataDir: join(dir, 'data') };
}

describe('the start of a board of the fleet', () => {
  it('runs the board file alone, with no doors, before any version', () => {
    const b = board();
    const { config, fleet } = loadAgentConfig(b.path);
    expect(config.doors).toEqual([]);
    expect(fleet).toMatchObject({ version: null, kept: null, passedOver: [] });
  });

  it('merges the applied version under the board file; keeps the one it replaces as previous.json', () => {
    const b = board();
    keepAppliedConfig(b.dataDir, signed(1, document(5)), null);
    keepAppliedConfig(b.dataDir, signed(2, document(8, 'agent: { id: other, logLevel: debug }\n')), signed(1, document(5)));
    const { config, fleet } = loadAgentConfig(b.path);
    expect(fleet?.version).toBe(2);
    // The board's id wins; the document's log level is taken.
    expect(config.agent).toMatchObject({ id: 'lobby', logLevel: 'debug' });
    expect(config.doors[0]).toMatchObject({ uuid: DOOR_UUID, unlockSeconds: 8 });
    expect(readKeptConfig(b.dataDir, 'previous')).toMatchObject({ kept: { version: 1 } });
  });

  it('takes the previous version when the applied one fails its check, and says why', () => {
    const b = board();
    keepAppliedConfig(
      b.dataDir,
      signed(3, document(5, `mqtt: { url: "mqtt://127.0.0.1:1", passwordFile: ${join(b.dataDir, 'missing')} }\n`)),
      signed(2, document(7)),
    );
    const { config, fleet } = loadAgentConfig(b.path);
    expect(fleet?.version).toBe(2);
    expect(config.doors[0]?.unlockSeconds).toBe(7);
    expect(fleet?.passedOver).toEqual([
      { file: join(b.dataDir, 'fleet/applied.json'), version: 3, problems: [`mqtt.passwordFile: cannot read ${join(b.dataDir, 'missing')}: no such file`] },
    ]);
  });

  it('starts on the board file alone when both fail: a signature by another key, a version for another agent', () => {
    const b = board();
    keepAppliedConfig(b.dataDir, signed(5, document(5), stranger.privateKey), signed(4, document(5), service.privateKey, 'garage'));
    const { config, fleet } = loadAgentConfig(b.path);
    expect(config.doors).toEqual([]);
    expect(fleet?.version).toBeNull();
    expect(fleet?.passedOver.map((p) => [p.version, p.problems.join()])).toEqual([
      [5, expect.stringContaining('the signature does not verify')],
      [4, expect.stringContaining('is for agent garage, not this one')],
    ]);
  });

  it('passes over an applied.json that was altered on disk', () => {
    const b = board();
    const good = signed(6, document(5));
    keepAppliedConfig(b.dataDir, Object.assign({}, good, { document: document(3600) }), null);
    const { fleet } = loadAgentConfig(b.path);
    expect(fleet?.version).toBeNull();
    expect(fleet?.passedOver[0]?.problems[0]).toContain('the signature does not verify');
  });
});
