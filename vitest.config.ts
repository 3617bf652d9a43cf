import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Suites that spawn processes or real servers (the CLI, `npm start`, `svc serve`, svc-mcp over stdio,
 * npx, a browser, Varnish, PostgreSQL replicas, anvil killed or restarted, nodes sharing a database,
 * payer processes sharing a ledger): slow and waiting on other processes, so `npm run test:fast` (the edit–test loop:
 * units and in-process suites) leaves them out. `npm test` runs everything.
 */
export const PROCESS_SUITES = [
  // Longest first (measured in CI): see ProcessSuitesFirst.
  'test/e2e/pack.test.ts',
  'test/chaos/kill.test.ts',
  'test/e2e/cli.test.ts',
  'test/functions/cli.test.ts',
  'test/operator/cli.test.ts',
  'test/e2e/npm-start-signals.test.ts',
  'test/dashboard/browser.test.ts',
  'test/mcp/eras.test.ts',
  'test/mcp/paid-tools.test.ts',
  'test/e2e/readme.test.ts',
  'test/chaos/postgres-stop.test.ts',
  'test/e2e/replica-reads.test.ts',
  'test/e2e/data-dir-lock.test.ts',
  'test/e2e/first-hour-messages.test.ts',
  'test/e2e/lost-log-stream.test.ts',
  'test/e2e/serve-mcp.test.ts',
  'test/payments/dev-chain-state.test.ts',
  'test/payments/dev-chain-supervision.test.ts',
  'test/mcp/views.test.ts',
  'test/e2e/shutdown.test.ts',
  'test/wallet/ledger-processes.test.ts',
  'test/mcp/transport.test.ts',
  'test/mcp/approval.test.ts',
  'test/mcp/spend-policy.test.ts',
  'test/e2e/database-outage.test.ts',
  'test/e2e/pool-of-one.test.ts',
  'test/e2e/nodes.test.ts',
  'test/e2e/cdn-varnish.test.ts',
  'test/chaos/slowloris.test.ts',
  'test/payments/faucet-cli.test.ts',
  'test/mcp/hosted-conformance.test.ts',
  'test/mcp/upstream.test.ts',
  'test/mcp/views-browser.test.ts',
  'test/mcp/browser-cors.test.ts',
  'test/public/browser-isolation.test.ts',
  'test/e2e/svc-mcp-package.test.ts',
  'test/public/abuse-reports.test.ts',
  'test/e2e/cli-data-folder.test.ts',
  'test/payments/anvil-orphan.test.ts',
  'test/e2e/mcp-tasks-nodes.test.ts',
  'test/mcp/tasks-stdio.test.ts',
  'test/mcp/third-party-clients.test.ts',
];

/**
 * The longest in-process suites (3–8 s each, measured on the 2-core CI machine), longest first.
 * Only their order depends on this list: it lets the short suites fill both workers at the end
 * instead of one long suite running alone.
 */
const SLOW_SUITES = [
  'test/tables/keys.test.ts',
  'test/storage/pglite-template.test.ts',
  'test/payments/facilitators.test.ts',
  'test/functions/functions.test.ts',
  'test/datasets/column-storage.test.ts',
  'test/dashboard/dashboard.test.ts',
  'test/tables/property.test.ts',
  'test/chaos/bad-input.test.ts',
  'test/datasets/parsers.test.ts',
  'test/datasets/convert.test.ts',
  'test/oauth/oauth-flow.test.ts',
  'test/payments/refusals.test.ts',
  'test/datasets/s3-and-account-api.test.ts',
];

/**
 * The process suites start first, longest first: they mostly wait on other processes (npm install,
 * restarts), so the in-process suites fill both cores meanwhile. Then the slow in-process suites,
 * longest first, then the rest. Without this, a fresh clone (no timing cache) ordered files by size:
 * it started the 2-minute pack suite last, and the fast tier took 67 s instead of ~52.
 */
class ProcessSuitesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const ordered = [...PROCESS_SUITES, ...SLOW_SUITES];
    const rank = (f: TestSpecification) => {
      const i = ordered.findIndex((p) => f.moduleId.endsWith(p));
      return i === -1 ? ordered.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

const fast = process.env.SVC_TEST_TIER === 'fast';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // vitest's own exclusions (node_modules: test/interop's holds some thousand packages' own tests) and, in the fast tier, the process suites.
    exclude: [...configDefaults.exclude, ...(fast ? PROCESS_SUITES : [])],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/setup.ts'],
    sequence: { sequencer: ProcessSuitesFirst },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // PGlite instances are heavy (≈0.5 GB each); two workers fit the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
    // A worker keeps its imported modules from one file to the next (every suite builds its own
    // service, database and clients, and keeps no state in modules): re-importing the service's
    // module graph for each file cost about 1.5 s a file, a third of the fast tier.
    isolate: false,
    // Transformed modules are kept on disk (node_modules/.experimental-vitest-cache, keyed by each
    // file's content): a re-run imports the service's graph without transforming it again, ~2 s less
    // per worker. A fresh clone starts without it.
    experimental: { fsModuleCache: true },
  },
});
