// The installed CLI (`npm run build`, after tsc): dist/cli/door-agent.js, the sync and checkpoint workers and the hardware
// self-test's kit, bundled by esbuild from tsc's output in dist/src (which is not installed). A CLI start on a
// Pi-class board is mostly module loading: Node resolves, reads and links each of ~1,000 ES module files one by
// one, where a few bundled files load at once. Each command is still imported only when it runs (code splitting
// keeps `relock` free of fastify and MQTT).
//
// dist/cli sits at the depth of dist/src, so what the code finds relative to itself (package.json for the
// version, build/Release for the native addons) is found from both. The native and optional packages stay
// outside the bundle and load from node_modules as before.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = join(import.meta.dirname, '..');
const outdir = join(root, 'dist/cli');

rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  // The CLI, the sync and checkpoint worker threads, and what scripts/hw-selftest.sh imports (an installed tree has dist/cli alone).
  entryPoints: {
    'door-agent': 'dist/src/cli.js',
    syncWorker: 'dist/src/sync/syncWorker.js',
    checkpointWorker: 'dist/src/store/checkpointWorker.js',
    'hw-selftest-kit': 'dist/src/commands/hwSelftestKit.js',
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.10',
  // Whitespace and syntax minified, identifiers kept: stack traces name our functions as the source does (one whose
  // name another module uses too gets a digit, as `parse2`; a class that names itself in its body, an underscore, as
  // `_Directory`). Not esbuild's keepNames, which keeps minified names by calling Object.defineProperty on every
  // function it creates, each time it creates it: each closure made on the tap path paid one (bench/HISTORY.md, "The
  // tap path").
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  // Native addons, and the packages that find their addon or their own files at run time.
  external: ['better-sqlite3', 'onoff', 'epoll', 'serialport', '@serialport/*'],
  // Bundled CommonJS packages call require(); in an ES module it comes from createRequire.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
});
