import type { Clock } from './kernel/clock.js';
import type { Config } from './kernel/config.js';
import type { AddressLimiter } from './http/address-limits.js';
import type { Db } from './db/client.js';
import type { ReadPools } from './db/read-pools.js';
import type { Logger } from './kernel/logger.js';
import type { Facilitator } from './payments/facilitator.js';
import type { SiteCache } from './sites/site-cache.js';
import type { PurgeOutbox } from './cdn/purge-outbox.js';
import type { SiteTraffic } from './sites/traffic-counter.js';
import type { TableLists } from './tables/table-lists.js';
import type { Metrics } from './metrics/metrics.js';
import type { BlobStore } from './storage/blob-store.js';

/**
 * Everything the service needs, passed in explicitly. `buildApp(deps)` makes the HTTP app from it;
 * tests build their own (PGlite template, temp blob folder, fixed clock). Later capabilities add a
 * field here (e.g. the payment facilitator) rather than reaching for globals.
 */
export interface Deps {
  config: Config;
  db: Db;
  /**
   * Table API reads: on PostgreSQL a pool whose connections run with the Table API's statement
   * timeout and custom plans (no transaction per read); on PGlite the same handle as `db`.
   */
  tableReads: Db;
  /** Which pool answers a public read: a streaming replica (DATABASE_READ_URL) or the primary (db/read-pools.ts). */
  readPools: ReadPools;
  blobs: BlobStore;
  clock: Clock;
  log: Logger;
  /** Service-wide HMAC secret (cookies, upload URLs), shared by every node through the database. */
  secret: string;
  /** Node-local cache of the site-serving hot path; writers invalidate it. */
  siteCache: SiteCache;
  /** The CDN purge outbox: changes of sites write the keys they made stale; any node purges them (inert without a CDN). */
  purges: PurgeOutbox;
  /** Node-local counts of what hosted sites served, flushed to the database every few seconds. */
  traffic: SiteTraffic;
  /** Node-local Table API reads: the tables read before (checked inside each statement) and the reads in flight. */
  tableLists: TableLists;
  /** Verifies and settles Agent API payments (SVC_X402_MODE: dev chain, chain RPC, or remote facilitator). */
  facilitator: Facilitator;
  /** This node's Prometheus counters (GET /metrics). */
  metrics: Metrics;
  /** Per-client-address limits of the anonymous surfaces (counted in memory, synced through the database). */
  addressLimits: AddressLimiter;
}
