import path from 'node:path';
import type { Config } from '../service/kernel/config.js';
import { openDb, reusePlansOn, type Database, type SessionPool } from '../service/db/client.js';
import { ReadPools } from '../service/db/read-pools.js';
import { unpackPgliteTemplate } from '../service/db/pglite-template.js';
import { getOrCreateSecret } from '../service/db/settings.js';
import { packagePath } from '../service/kernel/package-root.js';
import type { Deps } from '../service/deps.js';
import { systemClock, type Clock } from '../service/kernel/clock.js';
import { createLogger, type Logger } from '../service/kernel/logger.js';
import { createFacilitator } from '../service/payments/create-facilitator.js';
import { DevChainFacilitator } from '../service/payments/dev-chain/dev-facilitator.js';
import { TableLists } from '../service/tables/table-lists.js';
import { SiteTraffic } from '../service/sites/traffic-counter.js';
import { SiteCache } from '../service/sites/site-cache.js';
import { createMetrics } from '../service/metrics/metrics.js';
import { followSiteChanges } from '../service/sites/site-changes.js';
import { PurgeOutbox } from '../service/cdn/purge-outbox.js';
import { purgeAdapterFor } from '../service/cdn/purge-adapters.js';
import type { BlobStore } from '../service/storage/blob-store.js';
import { LocalBlobStore } from '../service/storage/local-store.js';
import { AddressLimiter } from '../service/http/address-limits.js';

export interface Runtime {
  deps: Deps;
  database: Database;
  close(): Promise<void>;
}

/** The blob store the configuration names (the AWS SDK loads only when S3 is configured). */
async function createBlobStore(config: Config, secret: string): Promise<BlobStore> {
  if (config.s3) {
    const { S3BlobStore } = await import('../service/storage/s3-store.js');
    return new S3BlobStore(config.s3);
  }
  return new LocalBlobStore(path.join(config.dataDir, 'blobs'), config.baseUrl, secret);
}

/**
 * The session of a Table API statement whose values are parameters: the configured statement
 * timeout, and custom plans (a prepared statement's generic plan cannot see which JSONB values are
 * filtered on and picks bad plans on big tables). The Table API's record reads run on its twin
 * (`keyReadSettings`); here run a statement with a value that has no literal (db/client.ts,
 * `inlineValues`), the kept record count of a page's total, `/schema`'s row check, and the public
 * reads of sites (sites/serving.ts).
 */
function tableReadSettings(config: Config): Record<string, string> {
  return { ...keyReadSettings(config), plan_cache_mode: 'force_custom_plan' };
}

/**
 * The session of the reads whose plan cannot depend on their parameters (a record by id, a page in
 * id order that nothing narrows, a read with its values written in its text:
 * `CompiledStatement.keyPlan`): the same timeout, and PostgreSQL's own plan cache, so such a read is
 * planned once per connection instead of at every run.
 */
function keyReadSettings(config: Config): Record<string, string> {
  return { statement_timeout: String(Math.max(0, Math.floor(config.tables.statementTimeoutMs))) };
}

/** A server's Table API read pool and its plan-reusing twin for key reads (`reusePlansOn`); both connect on demand. */
function openReadPools(database: Database, config: Config): [reads: SessionPool, keyReads: SessionPool] {
  const reads = database.openPool(tableReadSettings(config), config.databasePoolMax);
  const keyReads = database.openPool(keyReadSettings(config), config.databasePoolMax);
  reusePlansOn(reads.db, keyReads.db);
  return [reads, keyReads];
}

/**
 * When a purge is repeated (PurgeOutbox): after every node's serving cache has dropped the site row
 * it held at the change (its TTL) and a request in flight then has ended (5 s).
 */
function cdnSettleMs(config: Config): number {
  return config.siteCacheTtlMs + 5000;
}

/** Built with dist/ (bin/build.mjs); absent when the sources run without a build. */
const PGLITE_TEMPLATE = packagePath('dist', 'pglite-template.tar.gz');

/** The database the configuration names, opened as the service opens it (PGlite: from the template, its buffer size). */
export function openDatabase(config: Config): Promise<Database> {
  return openDb({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.databasePoolMax,
    sharedBuffers: config.pgliteSharedBuffers,
    template: (dir) => unpackPgliteTemplate(PGLITE_TEMPLATE, dir),
  });
}

/** Opens the real parts named by the configuration (database, blob store) and wires the deps. */
export async function createRuntime(
  config: Config,
  overrides: { clock?: Clock; log?: Logger; database?: Database; startDevChain?: boolean } = {},
): Promise<Runtime> {
  const log = overrides.log ?? createLogger(config.logLevel);
  const facilitator = createFacilitator(config, log);
  // `startDevChain` (startService, which waits for the chain before it listens): anvil, a process of
  // its own, starts while this one opens the database instead of after it. Should the opening fail,
  // the process ends and the exit hook of dev-chain/anvil.ts stops anvil.
  if (overrides.startDevChain && facilitator instanceof DevChainFacilitator) void facilitator.start();
  const database = overrides.database ?? (await openDatabase(config));
  const secret = await getOrCreateSecret(database.db, 'service');
  const [tableReads, tableKeyReads] = openReadPools(database, config);
  const metrics = createMetrics();
  // Each replica: a read pool with the same session settings as the primary's (its main pool is never used).
  const replicas = await Promise.all(config.replicas.urls.map((url) => openDb({ databaseUrl: url, migrate: false, poolMax: 1 })));
  const replicaPools = replicas.map((replica) => openReadPools(replica, config));
  const replicaReads = replicaPools.map(([reads]) => reads);
  const readPools = new ReadPools(
    database.db,
    tableReads.db,
    replicaReads.map((r) => r.db),
    config.replicas,
    metrics.registry,
  );
  await readPools.start();
  const clock = overrides.clock ?? systemClock;
  const addressLimits = new AddressLimiter(database.db, clock, config.addressLimits, (e) =>
    log.warn('per-address limits: the shared counts could not be synced; this node limits alone until they are', { error: (e as Error).message }),
  );
  const stopSyncingAddressLimits = addressLimits.start(config.addressLimitSyncMs);
  const deps: Deps = {
    config,
    db: database.db,
    tableReads: tableReads.db,
    readPools,
    blobs: await createBlobStore(config, secret),
    clock,
    log,
    secret,
    siteCache: new SiteCache(config.siteCacheTtlMs),
    purges: new PurgeOutbox(database.db, config.cdn ? purgeAdapterFor(config.cdn) : null, clock, log, cdnSettleMs(config), metrics.registry),
    traffic: new SiteTraffic(),
    tableLists: new TableLists(tableReads.db, metrics),
    facilitator,
    metrics,
    addressLimits,
  };
  // A change's notification arrives when it committed: every node then drains the purge outbox (one
  // takes the rows), and reads site rows on a replica only once it has replayed the change.
  const stopFollowingSiteChanges = followSiteChanges(database, deps.siteCache, log, () => {
    void readPools.siteChangesHeard();
    void deps.purges.drainWithin(0);
  });
  const stopPurging = deps.purges.start();
  return {
    deps,
    database,
    close: async () => {
      await stopFollowingSiteChanges();
      await stopPurging();
      await stopSyncingAddressLimits();
      await deps.facilitator.close(); // stops the dev chain's anvil
      await readPools.stop();
      await Promise.all([...replicaPools.flat(), ...replicas].map((r) => r.close()));
      await Promise.all([tableReads.close(), tableKeyReads.close()]);
      await database.close();
    },
  };
}
