// The import rules of docs/architecture.md ("Layers, and who may import whom"), checked by dependency-cruiser:
// `npm run lint:deps` (part of `npm test`). A broken rule fails with its name and the offending import.

// The layers of src/, top to bottom: a module may import its own layer and the layers below it, never one above.
// Layers on one line are siblings: they may not import each other either.
const LAYERS = [
  ['cli', ['^src/cli\\.ts$']],
  ['commands', ['^src/commands/']],
  ['demo', ['^src/demo/']],
  ['roots', ['^src/app\\.ts$'], ['^src/service/root\\.ts$']],
  ['config', ['^src/config/']],
  ['service', ['^src/service/(?!root\\.ts$)']],
  ['metrics', ['^src/metrics/']],
  ['mqtt-sync-control', ['^src/mqtt/'], ['^src/sync/'], ['^src/control/'], ['^src/fleet/']],
  ['door', ['^src/door/']],
  ['snapshot', ['^src/snapshot/']],
  ['store', ['^src/store/']],
  ['readers', ['^src/readers/']],
  ['hardware-system', ['^src/hardware/'], ['^src/system/']],
  ['protocol', ['^src/protocol/']],
  ['util', ['^src/(lifecycle|version)\\.ts$', '^src/util/'], ['^src/api/']],
  ['core', ['^src/core/']],
];

const either = (paths) => paths.join('|');

const layerRules = LAYERS.flatMap(([name, ...siblings], rank) => {
  const above = LAYERS.slice(0, rank).flatMap(([, ...groups]) => groups.flat());
  const rules = [];
  if (above.length > 0) {
    rules.push({
      name: `layer-${name}-imports-upward`,
      comment: `${name} may import only its own layer and the layers below it (docs/architecture.md, "Layers")`,
      severity: 'error',
      from: { path: either(siblings.flat()) },
      to: { path: either(above) },
    });
  }
  siblings.forEach((group, i) => {
    const others = siblings.filter((_g, j) => j !== i).flat();
    if (others.length === 0) return;
    rules.push({
      name: `layer-${name}-siblings-apart`,
      comment: `the parts of the ${name} layer do not import each other`,
      severity: 'error',
      from: { path: either(group) },
      to: { path: either(others) },
    });
  });
  return rules;
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no import cycle, of any length, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-is-pure',
      comment: 'src/core imports only src/core: no IO, timers, logger, package nor Node.js module',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { pathNot: '^src/core/' },
    },
    {
      name: 'service-imports-no-agent',
      comment: 'the service imports its own modules, protocol/, api/, util/ and core/ (its root: config/ too), never the agent',
      severity: 'error',
      from: { path: '^src/service/' },
      // lifecycle.ts and version.ts count as util/ (docs/architecture.md).
      to: { path: '^src/', pathNot: '^src/((service|protocol|api|util|core|config)/|(lifecycle|version)\\.ts$)' },
    },
    {
      name: 'agent-imports-no-service',
      comment: 'the agent never imports the service: what both need of MQTT is in protocol/',
      severity: 'error',
      from: { path: '^src/(app\\.ts$|metrics/|door/|mqtt/|sync/|control/|fleet/|store/|snapshot/|readers/|hardware/|system/)' },
      to: { path: '^src/service/' },
    },
    {
      name: 'readers-import-only-below',
      comment: 'src/readers imports only readers/, hardware/, protocol/, core/ and util/ (door/ uses the readers, not the reverse)',
      severity: 'error',
      from: { path: '^src/readers/' },
      to: { path: '^src/', pathNot: '^src/(readers|hardware|protocol|core|util)/' },
    },
    {
      name: 'service-stores-use-the-interface',
      comment: 'a service store uses SqlDb (service/sql/sqlDb.ts); only database.ts and service/sql/ open an engine',
      severity: 'error',
      from: { path: '^src/service/', pathNot: '^src/service/(database\\.ts$|sql/)' },
      to: { path: '^src/service/sql/(sqliteDb|postgresDb)\\.ts$' },
    },
    ...layerRules,
    {
      name: 'not-to-unresolvable',
      comment: 'every import resolves (a wrong path would hide an arrow from the rules above)',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    // Type-only imports count: they are arrows between modules all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
