import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/api/eventTypes.js';
import { CHAIN_STARTED } from '../../src/protocol/auditChain.js';
import { sdName, sdValue, syslogFrame, syslogPri, syslogSeverity, toJsonLine, toRfc5424, type AuditWireEvent } from '../../src/protocol/syslog.js';
import { parseSyslogUrl } from '../../src/protocol/syslogSender.js';

const FORMAT = { format: 'rfc5424' as const, facility: 'authpriv', enterpriseId: 32473, hostname: 'lobby-pi' };
const HASH = 'ab'.repeat(32);
const granted: AuditWireEvent = {
  kind: 'card',
  hint: '…78',
  reason: null,
  holders: [{ email_id: 101, reason: null }],
  level: 'Staff front door',
  who: 'Alice Adams',
  id: 'lobby-pi-121',
  seq: 121,
  at: '2026-11-24T09:00:03.120Z',
  door: '6f1c2a0e-0000-4000-8000-000000000001',
  type: 'access_granted',
  chain: '0b7f4c2e-1111-4222-8333-444455556666',
  prev_hash: '0'.repeat(64),
  hash: HASH,
};

// RFC 5424 section 6's ABNF, as regular expressions: HEADER SP STRUCTURED-DATA [SP MSG].
const PRINTUSASCII = '[!-~]';
const HEADER = new RegExp(
  `^<(\\d{1,3})>1 (\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,6})?(?:Z|[+-]\\d{2}:\\d{2})) (${PRINTUSASCII}{1,255}) (${PRINTUSASCII}{1,48}) (${PRINTUSASCII}{1,128}) (${PRINTUSASCII}{1,32}) `,
);
/** SD-ELEMENTs parsed as the RFC says: names of PRINTUSASCII but `= ]"`, values with `\"`, `\\`, `\]` escaped. */
function parseStructuredData(text: string): { elements: Record<string, Record<string, string>>; rest: string } {
  const elements: Record<string, Record<string, string>> = {};
  let i = 0;
  while (text[i] === '[') {
    const idMatch = /^\[([!-~]+?)(?=[ \]])/.exec(text.slice(i));
    if (!idMatch) throw new Error(`bad SD-ID at ${i}`);
    const id = idMatch[1]!;
    expect(id).toMatch(/^[^= \]"]{1,32}$/);
    i += idMatch[0].length;
    const params: Record<string, string> = {};
    while (text[i] === ' ') {
      const nameMatch = /^ ([^= \]"]{1,32})="/.exec(text.slice(i));
      if (!nameMatch) throw new Error(`bad PARAM-NAME at ${i}: ${text.slice(i, i + 20)}`);
      i += nameMatch[0].length;
      let value = '';
      for (;;) {
        const c = text[i++];
        if (c === undefined) throw new Error('unterminated PARAM-VALUE');
        if (c === '\\' && ['"', '\\', ']'].includes(text[i]!)) value += text[i++];
        else if (c === '"') break;
        else {
          // An unescaped `]` or `"` inside a value would end it for a receiver: the RFC requires them escaped.
          expect(c).not.toBe(']');
          value += c;
        }
      }
      params[nameMatch[1]!] = value;
    }
    expect(text[i]).toBe(']');
    i++;
    elements[id] = params;
  }
  return { elements, rest: text.slice(i) };
}

describe('an audit event as RFC 5424 (docs/audit.md, "SIEM export: syslog")', () => {
  it('has the header the RFC asks: PRI from facility and severity, VERSION 1, the event time, HOSTNAME, APP-NAME, PROCID -, MSGID the type', () => {
    const message = toRfc5424(granted, 'lobby-pi', FORMAT);
    const header = HEADER.exec(message);
    expect(header).not.toBeNull();
    const [, pri, timestamp, host, app, procid, msgid] = header!;
    expect(Number(pri)).toBe(10 * 8 + 6); // authpriv.info
    expect(timestamp).toBe('2026-11-24T09:00:03.120Z');
    expect([host, app, procid, msgid]).toEqual(['lobby-pi', 'door-agent', '-', 'access_granted']);
  });

  it('carries the envelope in meta@PEN and every other field in event@PEN, parsed back as they were', () => {
    const message = toRfc5424(granted, 'lobby-pi', FORMAT);
    const { elements, rest } = parseStructuredData(message.replace(HEADER, ''));
    expect(elements['meta@32473']).toEqual({
      id: 'lobby-pi-121',
      agent: 'lobby-pi',
      seq: '121',
      door: granted.door,
      chain: granted.chain,
      hash: HASH,
    });
    expect(elements['event@32473']).toEqual({
      kind: 'card',
      hint: '…78',
      reason: 'null',
      holders: '[{"email_id":101,"reason":null}]',
      level: 'Staff front door',
      who: 'Alice Adams',
    });
    // The text after the SD: the event in words (ASCII here, so no BOM).
    expect(rest).toBe(` access granted by Alice Adams at door ${granted.door}`);
  });

  it('escapes ", \\ and ] in a value, so a value with a ] does not end its element', () => {
    const tricky: AuditWireEvent = {
      id: 'a-1',
      seq: 1,
      at: '2026-11-24T09:00:00.000Z',
      door: null,
      type: 'local_command',
      user: 'x"] [meta@1 forged="1',
      path: 'C:\\doors',
    };
    const message = toRfc5424(tricky, 'a', FORMAT);
    expect(message).toContain('user="x\\"\\] [meta@1 forged=\\"1"');
    expect(message).toContain('path="C:\\\\doors"');
    const { elements } = parseStructuredData(message.replace(HEADER, ''));
    expect(Object.keys(elements)).toEqual(['meta@32473', 'event@32473']);
    expect(elements['event@32473']).toEqual({ user: 'x"] [meta@1 forged="1', path: 'C:\\doors' });
    // No door: no door parameter.
    expect(elements['meta@32473']).toEqual({ id: 'a-1', agent: 'a', seq: '1' });
    expect(sdValue('a]b"c\\d')).toBe('a\\]b\\"c\\\\d');
  });

  it('maps a field name SD-NAME does not allow: the character to _, cut to 32', () => {
    expect(sdName('a b=c]d"e')).toBe('a_b_c_d_e');
    expect(sdName('x'.repeat(40))).toBe('x'.repeat(32));
    expect(sdName('naïve')).toBe('na_ve');
  });

  it('marks a message text in UTF-8 with the BOM, and leaves an ASCII one plain', () => {
    const message = toRfc5424({ ...granted, who: 'José Núñez' }, 'lobby-pi', FORMAT);
    expect(message.endsWith(` \uFEFFaccess granted by José Núñez at door ${granted.door}`)).toBe(true);
    expect(toRfc5424(granted, 'lobby-pi', FORMAT)).not.toContain('\uFEFF');
  });

  it('takes its severity by type: alarms alert, refusals and lockouts warning, the rest info', () => {
    for (const type of ['duress', 'tamper', 'door_forced', 'door_held_open', 'emergency_release']) expect(syslogSeverity(type)).toBe('alert');
    for (const type of ['access_denied', 'keypad_locked_out', 'card_locked_out', 'command_rejected']) expect(syslogSeverity(type)).toBe('warning');
    for (const type of ['access_granted', 'door_opened', 'audit_chain_started']) expect(syslogSeverity(type)).toBe('info');
    expect(syslogPri('authpriv', 'door_forced')).toBe(81);
    expect(syslogPri('local0', 'access_denied')).toBe(16 * 8 + 4);
  });

  it('frames by octet counting (RFC 5425): the length in bytes, not characters', () => {
    const frame = syslogFrame('<86>1 … é');
    expect(frame.toString('utf8')).toBe(`${Buffer.byteLength('<86>1 … é')} <86>1 … é`);
    expect(frame.toString('utf8').startsWith('12 ')).toBe(true);
  });

  it('json: the wire event with the agent, as one object', () => {
    expect(JSON.parse(toJsonLine(granted, 'lobby-pi'))).toEqual({ agent: 'lobby-pi', ...granted });
  });

  it('reads the URL: tls with its default port 6514, tcp with its port, IPv6 in brackets', () => {
    expect(parseSyslogUrl('tls://siem.example.org')).toEqual({ tls: true, host: 'siem.example.org', port: 6514 });
    expect(parseSyslogUrl('tcp://127.0.0.1:1514')).toEqual({ tls: false, host: '127.0.0.1', port: 1514 });
    expect(parseSyslogUrl('tls://[::1]:7514')).toEqual({ tls: true, host: '::1', port: 7514 });
  });

  it("docs/audit.md's table lists every event type once, with the severity the messages carry", () => {
    const doc = readFileSync(new URL('../../docs/audit.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('## Every event type and its forms'));
    const rows = [...table.matchAll(/^\| `([a-z_]+)` \| (alert|warning|info) \|/gm)].map(([, type, severity]) => [type, severity]);
    expect(rows.map(([type]) => type).sort()).toEqual([...new Set([...EVENT_TYPES, CHAIN_STARTED])].sort());
    for (const [type, severity] of rows) expect([type, syslogSeverity(type!)]).toEqual([type, severity]);
  });
});
