import { defineConfig } from 'vitest/config';

/**
 * Suites that spawn processes (the CLI, `svc serve`, svc-mcp, a browser, anvil restarted on one data
 * directory, payer processes sharing a ledger): slow, so `npm run test:fast`
 * (the edit–test loop) leaves them out. `npm test` runs everything.
 */
export const PROCESS_SUITES = [
  'test/e2e/cli.test.ts',
  'test/e2e/serve-mcp.test.ts',
  'test/functions/cli.test.ts',
  'test/payments/faucet-cli.test.ts',
  'test/dashboard/browser.test.ts',
  'test/mcp/transport.test.ts',
  'test/e2e/pack.test.ts',
  'test/mcp/hosted-conformance.test.ts',
  'test/e2e/database-outage.test.ts',
  'test/mcp/upstream.test.ts',
  'test/chaos/kill.test.ts',
  'test/chaos/postgres-stop.test.ts',
  'test/chaos/slowloris.test.ts',
  'test/e2e/shutdown.test.ts',
  'test/payments/anvil-orphan.test.ts',
  'test/payments/dev-chain-state.test.ts',
  'test/wallet/ledger-processes.test.ts',
];

const fast = process.env.SVC_TEST_TIER === 'fast';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: fast ? PROCESS_SUITES : [],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // PGlite instances are heavy (≈0.5 GB each); two workers fit the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
    // A worker keeps its imported modules from one file to the next (every suite builds its own
    // service, database and clients, and keeps no state in modules): re-importing the service's
    // module graph for each file cost about 1.5 s a file, a third of the fast tier.
    isolate: false,
  },
});
