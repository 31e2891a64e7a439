// `npm run lint:spreads` (part of `npm test`): no object literal in the daemon's runtime modules starts with a spread
// and goes on with more members (`{ ...state, failures }`, `{ ...a, ...b }`).
//
// On Node 20 (V8 11.3) such a literal builds a new hidden class each time it runs: V8 records no transition from the
// copy a leading spread makes, so every property after it makes a class of its own (about 1.7 µs instead of 0.1 µs
// hot, and a class left for the collector). In the daemon that was every tap, event and message; taking them out cut
// the card path's own time from about 190 to 150 µs at p50 (docs/architecture.md, "The tap path runs as optimized
// code"). Write `withProps(base, { … })` (src/core/objects.ts), or `Object.assign({}, a, b, …)`, instead.
//
//   node scripts/check-spreads.mjs [DIR...]     (default: the runtime layers below)
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
/** What runs per tap, event, message or poll in the daemon (start-up, commands, config and the service are left out). */
const RUNTIME_DIRS = ['core', 'door', 'readers', 'hardware', 'system', 'store', 'protocol', 'mqtt', 'metrics', 'util'].map((d) => join(root, 'src', d));

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Each `file:line` where an object literal starts with a spread and has more members. */
function leadingSpreads(dirs) {
  const found = [];
  for (const dir of dirs) {
    for (const file of sources(dir)) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node) => {
        if (ts.isObjectLiteralExpression(node) && node.properties.length > 1 && ts.isSpreadAssignment(node.properties[0])) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
          found.push(`${relative(process.cwd(), file)}:${line + 1}: ${node.getText(source).replace(/\s+/g, ' ').slice(0, 80)}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
  }
  return found;
}

const dirs = process.argv.length > 2 ? process.argv.slice(2) : RUNTIME_DIRS;
const found = leadingSpreads(dirs);
if (found.length > 0) {
  console.error(`${found.length} object literal(s) start with a spread and go on with more members:`);
  for (const site of found) console.error(`  ${site}`);
  console.error(
    'On Node 20 each such literal builds a new hidden class every time it runs (scripts/check-spreads.mjs says why).\n' +
      'Write withProps(base, { ... }) from src/core/objects.ts, or Object.assign({}, a, b), instead.',
  );
  process.exit(1);
}
