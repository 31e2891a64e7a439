import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/commands/registry.js';
import { usagesUnder } from '../../src/commands/usage.js';

describe('the command registry', () => {
  it('has one entry for each command the usage table (and so --help) lists, and no other', () => {
    const usages = usagesUnder([]).map((u) => u.name);
    expect(Object.keys(COMMANDS).sort()).toEqual([...usages].sort());
  });

  it('loads each command module and finds its entry', async () => {
    for (const [name, load] of Object.entries(COMMANDS)) expect(typeof (await load()), name).toBe('function');
  });
});
