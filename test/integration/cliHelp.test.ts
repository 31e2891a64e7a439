import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

// Every command and the options its --help must explain (as a user types them).
const COMMANDS: Array<{ argv: string[]; options: string[]; config: boolean; exits: number[] }> = [
  { argv: ['demo'], options: ['--dir D'], config: false, exits: [0, 1, 2] },
  { argv: ['run'], options: ['--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['status'], options: ['--json', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['events'], options: ['--since SEQ', '--follow', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['check'], options: ['CREDENTIAL', '--kind card|pin|token', '--door DOOR', '--at TIME', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['import'], options: ['FILE', '--allow-mass-removal', '--json', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['sync'], options: ['--allow-mass-removal', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['relock'], options: ['--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['unlock'], options: ['--door DOOR', '--seconds N', '--config F'], config: true, exits: [0, 1, 2, 69, 77, 78] },
  { argv: ['lock'], options: ['--door DOOR', '--config F'], config: true, exits: [0, 1, 2, 69, 77, 78] },
  { argv: ['learn-card'], options: ['--reader R', '--seconds S', '--config F'], config: true, exits: [0, 1, 2, 69, 77, 78] },
  { argv: ['reader', 'learn'], options: ['--door UUID', '--reader entry|exit', '--timeout S', '--config F'], config: true, exits: [0, 1, 2, 69, 77, 78] },
  {
    argv: ['reader', 'firmware'],
    options: ['FILE', '--reader NAME', '--door NAME', '--expect-version V', '--config F'],
    config: true,
    exits: [0, 1, 2, 69, 77, 78],
  },
  { argv: ['reader', 'keyset'], options: ['--door UUID', '--reader entry|exit', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['config', 'check'], options: ['--config F'], config: true, exits: [0, 2, 78] },
  { argv: ['service'], options: ['--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['service', 'key', 'create'], options: ['--rank R', '--expires-days N', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['service', 'outbox'], options: ['--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['service', 'identity', 'release'], options: ['--email ADDRESS', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['service', 'migrate'], options: ['--to URL', '--password-file F', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['service', 'enrol-code'], options: ['--hours N', '--config F'], config: true, exits: [0, 1, 2, 78] },
  { argv: ['enrol'], options: ['[URL]', '[CODE]', '--data-dir D', '--wait-minutes N', '--config F'], config: true, exits: [0, 1, 2] },
  { argv: ['release', 'sign'], options: ['BUNDLE', '--key FILE'], config: false, exits: [0, 1, 2] },
  { argv: ['release', 'verify'], options: ['BUNDLE', '--key FILE', '--signature FILE'], config: false, exits: [0, 1, 2] },
  {
    argv: ['update', 'apply'],
    options: [
      '[BUNDLE]',
      '--signature FILE',
      '--release-key FILE',
      '--allow-downgrade',
      '--health-seconds N',
      '--rollout ID',
      '--root DIR',
      '--run-config F',
      '--config F',
    ],
    config: true,
    exits: [0, 1, 2, 78],
  },
];

function expectUsage(stdout: string, c: (typeof COMMANDS)[number]) {
  expect(stdout.startsWith(`Usage: door-agent ${c.argv.join(' ')}`)).toBe(true);
  // Each option on a line of its own, with a meaning after it.
  for (const option of [...c.options, '-h, --help']) {
    const line = stdout.split('\n').find((l) => l.trimStart().startsWith(`${option} `));
    expect(line, `${c.argv.join(' ')}: ${option}`).toMatch(/^ {2}\S.*\s{2}\w/);
  }
  expect(stdout.includes('Config: --config, else $DOOR_AGENT_CONFIG, else /etc/door-agent/config.yaml')).toBe(c.config);
  const exits = stdout
    .split('Exit codes:\n')[1]!
    .split('\n')
    .filter((l) => /^\s+\d+ {2}/.test(l))
    .map((l) => Number(l.trim().split(' ')[0]));
  expect(exits).toEqual(c.exits);
}

describe('door-agent <command> --help', () => {
  for (const c of COMMANDS) {
    it(`${c.argv.join(' ')}: --help, -h and help ${c.argv.join(' ')} print its usage, exit 0`, () => {
      for (const argv of [
        [...c.argv, '--help'],
        [...c.argv, '-h'],
        ['help', ...c.argv],
      ]) {
        const r = runCli(argv, { env: { DOOR_AGENT_CONFIG: '/nonexistent/config.yaml' } });
        expect(r.stderr, argv.join(' ')).toBe('');
        expect(r.status, argv.join(' ')).toBe(0);
        expectUsage(r.stdout, c);
      }
    });
  }

  it('--help wins over the other arguments: nothing runs (no config is read, nothing synced or relocked)', () => {
    for (const argv of [
      ['check', '123', '--door', 'x', '--help'],
      ['relock', '--config', '/nonexistent', '-h'],
      ['service', 'key', 'create', '--rank', 'ADMIN', '--help'],
    ]) {
      const r = runCli(argv);
      expect(r.status, argv.join(' ')).toBe(0);
      expect(r.stdout).toContain(`Usage: door-agent ${argv[0]}`);
    }
  });

  it('a group name shows each of its commands: reader --help, config -h', () => {
    expect(runCli(['reader', '--help']).stdout).toContain('Usage: door-agent reader keyset');
    expect(runCli(['config', '-h']).stdout).toContain('Usage: door-agent config check');
  });

  it('the top-level help lists every command with its synopsis', () => {
    const r = runCli(['help']);
    expect(r.status).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toContain(`\n  ${c.argv.join(' ')} ${c.options.includes('--config F') || c.options[0] === 'BUNDLE' ? '' : '['}`);
    expect(r.stdout).toContain('door-agent <command> --help');
  });

  it("a usage error ends with the command's usage line; help of an unknown command exits 2", () => {
    let r = runCli(['sync', '--colour']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Unknown option '--colour'");
    expect(r.stderr).toContain('usage: door-agent sync [--allow-mass-removal] [--config F] (door-agent sync --help for more)');
    r = runCli(['relock', 'now']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('expected no arguments, got 1 argument\nusage: door-agent relock [--config F]');
    r = runCli(['reader', 'frob']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('usage: door-agent reader keyset [--door UUID] [--reader entry|exit] [--config F]');
    r = runCli(['help', 'frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    r = runCli(['frobnicate', '--help']);
    expect(r.status).toBe(2);
  });
});
