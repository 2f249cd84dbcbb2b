// The layering rules, checked by `npm run lint` (dependency-cruiser): who may import whom.
//
//   packages/contract  the platform's API contract (types, HTTP client, webhook verification, the
//                      environment readers): imports nothing of ours
//   packages/runtime   process plumbing (pg pool, embedded PostgreSQL, start-up errors): nothing of ours
//   packages/platform  the platform (sandbox, engines, benchmarks, trainer): contract and runtime only
//   src/               the bot: contract and runtime; the platform only from its composition root
//                      (main.ts, app.ts, config.ts, roles/), which hosts it in the worker by default
//   migrations/        the bot's schema: Kysely<any>, never app code
//
// And no import cycles anywhere.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle means two modules cannot be understood, tested or moved apart: cut it at the seam.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'contract-stands-alone',
      severity: 'error',
      comment: 'The contract is what both sides share; it depends on neither.',
      from: { path: '^packages/contract/' },
      to: { path: '^(src|migrations|packages/(platform|runtime))/' },
    },
    {
      name: 'runtime-stands-alone',
      severity: 'error',
      from: { path: '^packages/runtime/' },
      to: { path: '^(src|migrations|packages/(platform|contract))/' },
    },
    {
      name: 'platform-not-bot',
      severity: 'error',
      comment: 'The platform is reached through its API; it never imports the bot.',
      from: { path: '^packages/platform/' },
      to: { path: '^(src|migrations)/' },
    },
    {
      name: 'bot-reaches-platform-through-contract',
      severity: 'error',
      comment: 'Only the composition root starts the platform in-process; the rest of the bot speaks the contract.',
      from: { path: '^src/', pathNot: '^src/(main|app|config)\\.ts$|^src/roles/' },
      to: { path: '^packages/platform/' },
    },
    {
      name: 'store-not-slack',
      severity: 'error',
      comment: 'The store is the only SQL: it keeps typed replies and knows nothing of how Slack renders them.',
      from: { path: '^src/store/' },
      to: { path: '^src/(slack/blocks|roles|http)/' },
    },
    {
      name: 'migrations-not-app',
      severity: 'error',
      comment: 'Migrations are written against Kysely<any> so they never depend on today\'s code.',
      from: { path: '^migrations/' },
      to: { path: '^(src|packages)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|\\.test-build-[^/]+|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.json'],
      mainFields: ['module', 'main', 'types'],
    },
    combinedDependencies: false,
  },
};
