// The layers of the service, checked by `make deps` (part of `make test`) with dependency-cruiser.
// A module imports its own layer and the layers it `may` import, never one above it, and no import goes
// round in a circle. Type-only imports count: a type couples two layers as surely as a value does.
//
// Lowest first:
//   runtime  actors/runtime/        the actor runtime (mailbox, supervisor, host, transport): a package of
//                                   its own that imports nothing of the service (also its own tsconfig)
//   base     src/config, log, clock, text, types, messages, errors, cpu-pool, open-files, attachments,
//            lifecycle (start and stop in one place, with no import of its own), src/cost/ (prices),
//            src/telemetry/ (traces and GenAI metrics: every layer may record a span)
//   sim      src/sim/                the offline simulator, a program of its own: imports only itself
//   clients  src/db, providers, engines, tools     the outside world: database, models, engines, tools
//   domain   src/domain (the service's own words: its resources as values), store, chat, search, models, auth (who is calling),
//            schemas, run-deps, checkpoints (the host's timer)
//   kinds    actors/ (but runtime)   the run kinds (chat, search, title) and the hosts that run them
//   http     src/http/               HTTP on uWebSockets.js: router, bodies, SSE, the error catalogue.
//                                   Beside kinds, not above it: it imports no run kind and no service module
//   service  src/cluster, admission/, runs, idempotent-start, claimed-keys, drain, readiness, heartbeat, metrics, context,
//            users, run-owners
//   routes   src/routes, openapi (the API's document: names the domain's resources, describes the routes),
//            openai (the OpenAI-compatible API)
//   app      src/app, main, upstreams (the composition root; the only one that starts the simulator)
//
// Outside the service: test/helpers is the harness that test/ and bench/ share (servers, databases,
// processes, the fake run io). bench/ may import it and nothing else of test/; it imports neither bench/
// nor the rest of test/. src/ and actors/ import neither.

const layers = [
  { name: 'runtime', paths: ['^actors/runtime/'], may: [] },
  { name: 'base', paths: ['^src/(config|log|clock|text|types|messages|errors|cpu-pool|open-files|attachments|lifecycle)\\.ts$', '^src/(cost|telemetry)/'], may: [] },
  { name: 'sim', paths: ['^src/sim/'], may: [] },
  { name: 'clients', paths: ['^src/(db|providers|engines|tools)/'], may: ['base'] },
  { name: 'domain', paths: ['^src/(domain|store|chat|search|models|auth)/', '^src/(schemas|run-deps|checkpoints)\\.ts$'], may: ['base', 'clients'] },
  { name: 'kinds', paths: ['^actors/(?!runtime/)'], may: ['runtime', 'base', 'clients', 'domain'] },
  { name: 'http', paths: ['^src/http/'], may: ['runtime', 'base', 'clients', 'domain'] },
  {
    name: 'service',
    paths: ['^src/cluster/', '^src/admission/', '^src/(runs|idempotent-start|claimed-keys|drain|readiness|heartbeat|metrics|context|users|run-owners|takeover)\\.ts$'],
    may: ['runtime', 'base', 'clients', 'domain', 'kinds', 'http'],
  },
  { name: 'routes', paths: ['^src/(routes|openapi|openai)/'], may: ['runtime', 'base', 'clients', 'domain', 'kinds', 'http', 'service'] },
  { name: 'app', paths: ['^src/(app|main|upstreams)\\.ts$'], may: ['runtime', 'base', 'sim', 'clients', 'domain', 'kinds', 'http', 'service', 'routes'] },
];

const pathsOf = (name) => layers.find((l) => l.name === name).paths;
const service = '^(src|actors)/';

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
      comment: 'every module of src/ and actors/ belongs to a layer: add a new one to the list in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: service, pathNot: layers.flatMap((l) => l.paths) },
      to: {},
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
