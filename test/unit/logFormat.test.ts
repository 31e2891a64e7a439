import { describe, expect, it } from 'vitest';
import { chooseLogFormat, journalLine, journalPriority, localTimeFormat, prettyLine } from '../../src/util/logFormat.js';

const line = (record: Record<string, unknown>) => JSON.stringify({ level: 30, time: '2026-11-29T13:05:09.042Z', pid: 7, agent: 'front', ...record });

describe('the log line forms (docs/logging.md)', () => {
  it("journald's priorities: fatal crit, error err, warn warning, info info, debug and trace debug", () => {
    expect([60, 50, 40, 30, 20, 10].map(journalPriority)).toEqual([2, 3, 4, 6, 7, 7]);
    expect(journalLine(line({ level: 40, msg: 'sync failed' }))).toMatch(/^<4>\{"level":40,/);
    expect(journalLine(line({ level: 60, msg: 'fatal error' }))).toMatch(/^<2>\{/);
  });

  it('auto: journal only when stdout is the very stream $JOURNAL_STREAM names; else pretty at a terminal, json elsewhere', () => {
    const device = { dev: 24, ino: 7781 };
    expect(chooseLogFormat('auto', { journalStream: '24:7781', device, isTty: false })).toBe('journal');
    // A shell started from a unit inherits the variable, not the stream: its output is not the journal's.
    expect(chooseLogFormat('auto', { journalStream: '24:9999', device, isTty: true })).toBe('pretty');
    expect(chooseLogFormat('auto', { journalStream: undefined, device, isTty: false })).toBe('json');
    expect(chooseLogFormat('json', { journalStream: '24:7781', device, isTty: true })).toBe('json');
  });

  it("pretty: the time in the zone given, the level's name, the message, the fields that matter; an error by its message", () => {
    const time = localTimeFormat('Europe/Berlin');
    expect(prettyLine(line({ msg: 'door-agent ready', doors: 2 }), time)).toBe('2026-11-29 14:05:09.042 INFO  door-agent ready  doors=2\n');
    const warned = prettyLine(
      line({ level: 40, msg: 'sync failed', err: { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:9', code: 'ECONNREFUSED', stack: 'Error: at x' } }),
      time,
    );
    expect(warned).toBe('2026-11-29 14:05:09.042 WARN  sync failed  err="connect ECONNREFUSED 127.0.0.1:9 (ECONNREFUSED)"\n');
    expect(prettyLine(line({ msg: 'tap', door: 'Front door', card: '…1234' }), localTimeFormat('UTC'))).toBe(
      '2026-11-29 13:05:09.042 INFO  tap  door="Front door" card=…1234\n',
    );
  });

  it('pretty: a long nested value is cut, and a line that is not JSON passes as it came', () => {
    const long = prettyLine(line({ msg: 'x', detail: { list: 'a'.repeat(500) } }), localTimeFormat('UTC'));
    expect(long.length).toBeLessThan(200);
    expect(long).toContain('…');
    expect(prettyLine('not json\n', localTimeFormat('UTC'))).toBe('not json\n');
  });
});
