// Screenshots of the operator console for the README: starts the demo (`door-agent demo`) in a directory of its
// own, signs in with the ADMIN key it prints, taps a few cards so the events have something to show, and writes
// docs/console/<page>.png for each page. Run after `npm run build`: node scripts/console-screenshots.mjs
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const root = join(import.meta.dirname, '..');
const out = join(root, 'docs/console');
mkdirSync(out, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'console-shots-'));
const demo = spawn(process.execPath, [join(root, 'dist/cli/door-agent.js'), 'demo', '--dir', dir], { stdio: ['pipe', 'pipe', 'inherit'] });
let text = '';
demo.stdout.on('data', (d) => (text += d.toString()));
const started = Date.now();
while (!/Ctrl-C stops everything/.test(text)) {
  if (Date.now() - started > 60_000 || demo.exitCode !== null) throw new Error(`the demo did not start:\n${text}`);
  await new Promise((r) => setTimeout(r, 100));
}
const base = /console\s+(http:\/\/\S+)\/console/.exec(text)[1];
const key = /sign in with this ADMIN API key:\s+(dak_\S+)/.exec(text)[1];
for (const card of ['4213578', '4213579', '4213580']) {
  demo.stdin.write(`${card}\n`);
  await new Promise((r) => setTimeout(r, 700));
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 }, colorScheme: 'light' });
  const page = await context.newPage();
  await page.goto(`${base}/console`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/people$/);
  const shots = [
    ['people', '/console/people?q=example'],
    ['doors', '/console/doors'],
    ['links', '/console/links'],
    ['link-qr', '/console/links/1'],
    ['events', '/console/events'],
    ['agents', '/console/agents'],
  ];
  for (const [name, path] of shots) {
    await page.goto(`${base}${path}`);
    await page.screenshot({ path: join(out, `${name}.png`), fullPage: true });
    console.log(`docs/console/${name}.png`);
  }
  // The same page on a phone, in dark mode.
  const phone = await browser.newContext({ viewport: { width: 390, height: 760 }, colorScheme: 'dark', deviceScaleFactor: 1 });
  await phone.addCookies(await context.cookies());
  const small = await phone.newPage();
  await small.goto(`${base}/console/doors`);
  await small.screenshot({ path: join(out, 'doors-phone-dark.png'), fullPage: true });
  console.log('docs/console/doors-phone-dark.png');
} finally {
  await browser.close();
  demo.kill('SIGINT');
  await new Promise((r) => demo.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
