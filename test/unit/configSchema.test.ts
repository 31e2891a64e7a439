import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configJsonSchemaText } from '../../src/config/jsonSchema.js';
import { ROOT } from '../support/cli.js';
import { configProblems } from '../support/configProblems.js';

// Issue 53 item 8, the agent's half: schema/config.schema.json is generated from the zod schema, the example
// configs name it for editors (the YAML language server), and it agrees with `config check` (parseConfig, what
// config check and run load a file with) on the examples and on wrong files. What JSON Schema cannot express (the
// checks across keys, a few refinements) is the documented difference: the schema accepts, config check refuses.

const SCHEMA_FILE = join(ROOT, 'schema/config.schema.json');
const EXAMPLES = ['config/door-agent.example.yaml', 'examples/door-agent.yaml'];
const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const BACK = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';

const ajv = new Ajv2020({ allErrors: true, strict: true });
// ajv-formats is CommonJS: module.exports is the plugin, and its .default too.
ajvFormats.default(ajv);
const validate = ajv.compile(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as object);

/** What the editor says of a file: the keys the schema finds wrong, as config check names them (none: accepted). */
function schemaErrors(text: string): string[] {
  if (validate(parse(text))) return [];
  return (validate.errors ?? []).map((e) => {
    const key =
      (e.params as { additionalProperty?: string; missingProperty?: string }).additionalProperty ?? (e.params as { missingProperty?: string }).missingProperty;
    const parts = [...e.instancePath.split('/').slice(1), ...(key === undefined ? [] : [key])];
    return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') || '(top level)';
  });
}

const BASE = {
  agent: 'agent: { id: lobby, dataDir: /tmp/door-agent-schema, timezone: Europe/Berlin }',
  access: 'access: { groups: [Staff] }',
  gpio: 'gpio: { driver: chardev }',
  doors: `doors:\n  - { uuid: ${FRONT}, resourceId: 12, name: Front door, relay: { pin: 17 }, reader: { path: /dev/ttyUSB0 } }`,
};
/** A valid file with one section replaced (or left out: null), or something added. */
function file(changes: Partial<Record<keyof typeof BASE, string | null>> = {}, extra = ''): string {
  const sections = Object.entries(BASE).map(([key, text]) => (key in changes ? changes[key as keyof typeof BASE] : text));
  return `${sections.filter((s) => s !== null).join('\n')}\n${extra}\n`;
}
const door = (keys: string) => ({ doors: `doors:\n  - { uuid: ${FRONT}, resourceId: 12, relay: { pin: 17 }, ${keys} }` });

describe('the configuration JSON Schema', () => {
  it('schema/config.schema.json is what `npm run schema` generates from the zod schema', () => {
    const fresh = readFileSync(SCHEMA_FILE, 'utf8') === configJsonSchemaText();
    expect(fresh, 'schema/config.schema.json differs from the zod schema: run "npm run schema" and commit the file').toBe(true);
  });

  it('the example configs name it on their first line, by a path relative to the file', () => {
    for (const example of EXAMPLES) {
      const first = readFileSync(join(ROOT, example), 'utf8').split('\n')[0];
      expect(first, example).toBe('# yaml-language-server: $schema=../schema/config.schema.json');
    }
  });

  it('uses no keyword an editor reading draft-07 (the YAML language server) takes differently', () => {
    const keys = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (typeof node === 'object' && node !== null) {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'properties') Object.values(value as object).forEach(walk);
          else {
            keys.add(key);
            walk(value);
          }
        }
      }
    };
    walk(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')));
    for (const later of ['prefixItems', 'unevaluatedProperties', 'unevaluatedItems', 'dependentRequired', 'dependentSchemas', '$dynamicRef', '$anchor']) {
      expect(keys.has(later), later).toBe(false);
    }
  });
});

describe('the schema and config check agree', () => {
  it('on the example configs: both accept', () => {
    for (const example of EXAMPLES) {
      const text = readFileSync(join(ROOT, example), 'utf8');
      expect(schemaErrors(text), example).toEqual([]);
      expect(configProblems(text), example).toEqual([]);
    }
    expect(schemaErrors(file())).toEqual([]);
    expect(configProblems(file())).toEqual([]);
  });

  it.each([
    ['a wrong type: an agent id that is a list', file({ agent: 'agent: { id: [lobby] }' })],
    ['a wrong type: a resourceId in words', file({ doors: BASE.doors.replace('resourceId: 12', 'resourceId: twelve') })],
    ['a wrong type: an mqtt url that is a number', file({}, 'mqtt: { url: 1883 }')],
    ['a wrong type: rtc: yes (a string in YAML 1.2)', file({ agent: 'agent: { id: lobby, rtc: yes }' })],
    ['an unknown top-level key', file({}, 'colour: red')],
    ['an unknown door key', file(door('unlockSecs: 5'))],
    ['out of range: relay pin 64', file({ doors: BASE.doors.replace('pin: 17', 'pin: 64') })],
    ['out of range: unlockSeconds 0', file(door('unlockSeconds: 0'))],
    ['out of range: maxEvents 5', file({ agent: 'agent: { id: lobby, maxEvents: 5 }' })],
    ['a bad enum: failMode sideways', file(door('failMode: sideways'))],
    ['a bad enum: gpio driver gpiod', file({ gpio: 'gpio: { driver: gpiod }' })],
    ['a bad enum: a reader type osdp2', file(door('reader: { type: osdp2, path: /dev/ttyUSB0 }'))],
    ['a bad enum: a baud rate no UART has', file(door('reader: { path: /dev/ttyUSB0, baudRate: 1234 }'))],
    ['missing: the agent section', file({ agent: null })],
    ['missing: a door resourceId', file({ doors: `doors:\n  - { uuid: ${FRONT}, relay: { pin: 17 } }` })],
    ['missing: a wiegand reader d1', file(door('reader: { type: wiegand, d0: 5 }'))],
    ['no door at all', file({ doors: 'doors: []' })],
    ['a malformed uuid', file({ doors: BASE.doors.replace(FRONT, 'not-a-uuid') })],
    ['an agent id with a space', file({ agent: 'agent: { id: "lobby pi" }' })],
  ])('on %s: both refuse, naming the same key', (_what, text) => {
    const schemaKeys = schemaErrors(text);
    const checkKeys = configProblems(text).map((p) => p.slice(0, p.indexOf(': ')));
    expect(schemaKeys).not.toEqual([]);
    expect(checkKeys).not.toEqual([]);
    expect(
      checkKeys.filter((key) => schemaKeys.includes(key)),
      `schema: ${schemaKeys.join(', ')}; config check: ${checkKeys.join(', ')}`,
    ).not.toEqual([]);
  });

  // The documented difference (docs/config-schema.md, "What the schema cannot check"): rules across keys and a few
  // refinements. An editor accepts these; config check (and run) refuse them.
  it.each([
    [
      'two doors on one relay pin',
      file({ doors: `${BASE.doors}\n  - { uuid: ${BACK}, resourceId: 13, relay: { pin: 17 } }` }),
      'doors[1].relay.pin: GPIO 17 is already used by doors[0].relay.pin',
    ],
    [
      'the same door uuid twice',
      file({ doors: `${BASE.doors}\n  - { uuid: ${FRONT}, resourceId: 13, relay: { pin: 18 } }` }),
      'doors[1].uuid: same uuid as doors[0]',
    ],
    [
      'an unlock longer than the door maximum',
      file(door('unlockSeconds: 20, maxUnlockSeconds: 10')),
      'doors[0].unlockSeconds: is longer than maxUnlockSeconds (10)',
    ],
    [
      'a time zone that does not exist',
      file({ agent: 'agent: { id: lobby, timezone: Mars/Olympus }' }),
      'agent.timezone: not an IANA time zone (e.g. Europe/Berlin)',
    ],
    ['nobody who may open a door', file({ access: 'access: {}' }), expect.stringMatching(/^access: list at least one group or policy/)],
  ])('on %s: the schema accepts, config check refuses', (_what, text, problem) => {
    expect(schemaErrors(text)).toEqual([]);
    expect(configProblems(text)).toContainEqual(problem);
  });
});
