// The layers of the service, checked by `make deps` (part of `make test`) with dependency-cruiser.
// A module imports its own layer and the layers it `may` import, never one above it, and no import goes
// round in a circle. Type-only imports count: a type couples two layers as surely as a value does.
//
// Lowest first, each a set of folders (a file goes in the folder of its layer: docs/architecture.md,
// "Where a new file goes"; a file loose in src/ belongs to no layer and fails in-a-layer):
//   runtime  actors/runtime/
//            the actor runtime (mailbox, supervisor, host, transport): a package of its own that imports
//            nothing of the service (also its own tsconfig)
//   base     src/base/, src/cost/, src/telemetry/
//            configuration, logging, errors, time, text, the spec's shapes: imports nothing of the service
//   sim      src/sim/
//            the offline simulator, a program of its own: imports only itself
//   clients  src/db/, src/providers/, src/engines/, src/tools/
//            the outside world: database, models, engines, tools
//   domain   src/domain/, src/store/, src/chat/, src/search/, src/models/, src/auth/
//            the service's own words (its resources and request schemas) and storage, who is calling, what a
//            run is given
//   kinds    actors/ (but actors/runtime/)
//            the run kinds (chat, search, title) and the hosts that run them
//   http     src/http/
//            HTTP on uWebSockets.js: router, bodies, SSE, the error catalogue; beside kinds, not above it: it
//            imports no run kind and no service module
//   service  src/service/, src/cluster/, src/admission/
//            keeps the service running: the run registry, cluster, admission, drain, readiness, users,
//            takeover
//   routes   src/routes/, src/openapi/, src/openai/
//            the endpoints and the OpenAPI document that describes them
//   app      src/app/
//            the composition root: builds and starts the server (the only one that starts the simulator)
//
// Outside the service: test/helpers is the harness that test/ and bench/ share (servers, databases,
// processes, the fake run io). bench/ may import it and nothing else of test/; it imports neither bench/
// nor the rest of test/. src/ and actors/ import neither.

const layers = [
  { name: 'runtime', paths: ['^actors/runtime/'], may: [] },
  { name: 'base', paths: ['^src/(base|cost|telemetry)/'], may: [] },
  { name: 'sim', paths: ['^src/sim/'], may: [] },
  { name: 'clients', paths: ['^src/(db|providers|engines|tools)/'], may: ['base'] },
  { name: 'domain', paths: ['^src/(domain|store|chat|search|models|auth)/'], may: ['base', 'clients'] },
  { name: 'kinds', paths: ['^actors/(?!runtime/)'], may: ['runtime', 'base', 'clients', 'domain'] },
  { name: 'http', paths: ['^src/http/'], may: ['runtime', 'base', 'clients', 'domain'] },
  { name: 'service', paths: ['^src/(service|cluster)/', '^src/admission/'], may: ['runtime', 'base', 'clients', 'domain', 'kinds', 'http'] },
  { name: 'routes', paths: ['^src/(routes|openapi|openai)/'], may: ['runtime', 'base', 'clients', 'domain', 'kinds', 'http', 'service'] },
  { name: 'app', paths: ['^src/app/'], may: ['runtime', 'base', 'sim', 'clients', 'domain', 'kinds', 'http', 'service', 'routes'] },
];

const pathsOf = (name) => layers.find((l) => l.name === name).paths;
const service = '^(src|actors)/';
// The runtime's public modules: the files its package.json `exports` (a package of its own).
// Read from the directory cruised (the root), not beside this file: under test/compile.mjs's .build/ this file is a link.
const runtimeExports = Object.values(JSON.parse(require('node:fs').readFileSync('actors/runtime/package.json', 'utf8')).exports).map((f) => `^actors/runtime/${f.slice(2).replace(/\./g, '\\.')}$`);

const layerRules = layers.map((layer) => ({
  name: `layer-${layer.name}`,
  comment: `${layer.name} imports only ${[layer.name, ...layer.may].join(', ')} (see the layers at the top of .dependency-cruiser.cjs)`,
  severity: 'error',
  from: { path: layer.paths },
  to: { path: service, pathNot: [...layer.paths, ...layer.may.flatMap(pathsOf)] },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'in-a-layer',
      comment: 'every module of src/ and actors/ belongs to a layer: put a new one in the folder of its layer (docs/architecture.md, "Where a new file goes"), never loose in src/',
      severity: 'error',
      from: { path: service, pathNot: layers.flatMap((l) => l.paths) },
      to: {},
    },
    {
      name: 'runtime-through-its-exports',
      comment: 'src/ and actors/ use the actor runtime through the modules its package exports (actors/runtime/package.json): add one there to use it',
      severity: 'error',
      from: { path: service, pathNot: '^actors/runtime/' },
      to: { path: '^actors/runtime/', pathNot: runtimeExports },
    },
    {
      name: 'no-circular',
      comment: 'an import that leads back to the module itself: split out what both sides need',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'service-imports-no-tests',
      comment: 'src/ and actors/ are the product: they import neither test/ nor bench/',
      severity: 'error',
      from: { path: service },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'bench-imports-only-the-harness',
      comment: 'bench/ shares test/helpers (the harness) with test/, and imports nothing else of test/',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/', pathNot: '^test/helpers/' },
    },
    {
      name: 'harness-imports-no-tests',
      comment: 'test/helpers is shared with bench/: it imports neither bench/ nor the rest of test/',
      severity: 'error',
      from: { path: '^test/helpers/' },
      to: { path: '^(test|bench)/', pathNot: '^test/helpers/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mjs', '.js', '.json'] },
  },
};
