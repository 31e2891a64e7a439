import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HomeAssistantCode } from '../../src/mqtt/homeAssistantCode.js';
import { readHomeAssistantCode } from '../../src/util/secretFiles.js';
import { tempDir } from '../support/cli.js';

const tmp = tempDir('door-agent-ha-code-');
afterAll(tmp.cleanup);

function recordingLogger() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, msg = '') =>
      void lines.push({ level, fields, msg });
  return { lines, logger: { warn: at('warn'), info: at('info'), debug: at('debug'), error: at('error') } as never };
}

describe('the Home Assistant code (mqtt.homeAssistant.codeFile)', () => {
  it('takes the right code only; a wrong, empty or missing one is refused', () => {
    const { logger } = recordingLogger();
    const code = new HomeAssistantCode('4711', { monoNow: () => 0, logger });
    expect(code.matches('4711')).toBe(true);
    for (const wrong of ['4712', '471', '47110', '', null, undefined, ' 4711']) expect(code.matches(wrong), String(wrong)).toBe(false);
  });

  it('tells Home Assistant the form of the code, not its length: digits (a keypad) or any characters', () => {
    const { logger } = recordingLogger();
    expect(new HomeAssistantCode('123456', { monoNow: () => 0, logger }).format).toBe('^\\d{4,}$');
    expect(new HomeAssistantCode('open sesame', { monoNow: () => 0, logger }).format).toBe('^.{4,}$');
    expect(new RegExp(new HomeAssistantCode('123456', { monoNow: () => 0, logger }).format).test('123456')).toBe(true);
  });

  it('warns when wrong codes come several within a minute, never with the code', () => {
    const { logger, lines } = recordingLogger();
    let now = 0;
    const code = new HomeAssistantCode('secret-code', { monoNow: () => now, logger });
    code.matches('zq-1');
    now += 20_000;
    code.matches('zq-2');
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    now += 20_000;
    code.matches('zq-3');
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(lines[0]!.fields).toEqual({ wrongCodes: 3, withinSeconds: 60 });
    // A minute later the count starts again.
    now += 120_000;
    code.matches('zq-4');
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toMatch(/zq-|secret-code/);
  });

  it('reads the code from a file only its owner (and group) can read; a missing, empty, short or world-readable file is a config error', () => {
    const file = (name: string, text: string, mode = 0o600) => {
      const path = join(tmp.path, name);
      writeFileSync(path, text);
      chmodSync(path, mode);
      return path;
    };
    expect(readHomeAssistantCode(file('good', '4711\n'))).toBe('4711');
    expect(readHomeAssistantCode(file('group', 'open sesame', 0o640))).toBe('open sesame');
    const problems: Array<[string, RegExp]> = [
      [join(tmp.path, 'missing'), /mqtt\.homeAssistant\.codeFile: cannot read .*missing/],
      [file('empty', '\n'), /mqtt\.homeAssistant\.codeFile: .*empty is empty/],
      [file('short', '123\n'), /holds a code of 3 characters; it must have 4 to 256/],
      [file('open', '4711\n', 0o644), /is readable by others \(mode 644\): chmod 600/],
    ];
    for (const [path, message] of problems) {
      let error: unknown = null;
      try {
        readHomeAssistantCode(path);
      } catch (err) {
        error = err;
      }
      expect(error, path).toMatchObject({ exitCode: 78, message: expect.stringMatching(message) });
      expect(String((error as Error).message)).not.toContain('4711');
    }
  });
});
