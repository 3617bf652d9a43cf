/**
 * The parsed configuration's shape, which every layer may name (service/config.ts parses the
 * environment into it once, at start, and passes it down).
 */

/**
 * The anonymous surfaces limited per client address (docs/public-operation.md). Each counts the
 * requests one address makes in a minute:
 *   - `agent`: every request to the Agent API (`/api/x402…`): its free actions and unpaid quotes;
 *   - `mcp-x402`: POSTs to the hosted wallet MCP endpoint `/mcp/x402`;
 *   - `table-read` / `table-write`: Table API GETs / POST, PATCH, PUT and DELETE;
 *   - `invoke`: `POST /api/v1/functions/invoke/:slug`;
 *   - `signin`, `signup`, `abuse`: the dashboard's sign-in and sign-up forms, the public report form.
 */
export const ADDRESS_SURFACES = ['agent', 'mcp-x402', 'table-read', 'table-write', 'invoke', 'signin', 'signup', 'abuse'] as const;
export type AddressSurface = (typeof ADDRESS_SURFACES)[number];
export type AddressLimits = Record<AddressSurface, number>;

export interface Limits {
  /** Account API requests per credential per minute; 0 disables the limiter. */
  rateLimitPerMinute: number;
  maxSitesPerAccount: number;
  maxFilesPerSite: number;
  maxFileBytes: number;
  /** Total blob bytes per owner (account or wallet). */
  maxStorageBytes: number;
  maxJsonBodyBytes: number;
}

export interface S3Config {
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

/** Functions (service/functions): sandbox limits and quotas. */
export interface FunctionsConfig {
  maxFunctionsPerAccount: number;
  maxCodeBytes: number;
  /** QuickJS heap per invocation. */
  memoryBytes: number;
  /** Guest CPU time per invocation. */
  cpuMs: number;
  /** Wall-clock time per invocation, including SVC_MEMORY round trips. */
  timeoutMs: number;
  /** Invocations per credential per minute (on top of the Account API rate limit); 0 disables. */
  invokesPerMinute: number;
  /** Invocations per calling account per UTC month; 0 disables. */
  maxInvocationsPerMonth: number;
  /** Sandbox worker threads; 0 runs invocations on the main thread (a runaway guest then blocks it until its deadline). */
  workers: number;
}

export interface Config {
  port: number;
  host: string;
  /** Public origin of the service, without trailing slash. */
  baseUrl: string;
  /** Sites are served at `<slug>.<sitesDomain>` (plus the base URL's port) and at `{baseUrl}/s/<slug>/`. */
  sitesDomain: string;
  dataDir: string;
  databaseUrl?: string;
  /** PostgreSQL connections per node (SVC_DATABASE_POOL_MAX). */
  databasePoolMax: number;
  /** Streaming replicas for public reads (DATABASE_READ_URL, comma-separated; db/read-pools.ts). */
  replicas: ReplicasConfig;
  /** The embedded database's buffer pool (PGlite's shared_buffers; SVC_PGLITE_SHARED_BUFFERS; unset: openDb's default). */
  pgliteSharedBuffers?: string;
  s3?: S3Config;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /**
   * How many proxies of ours stand in front (SVC_TRUST_PROXY; 0 = none): the client address is the
   * one the outermost of them saw, the matching X-Forwarded-For entry counted from the right.
   */
  trustProxy: number;
  /** Requests per client address per minute on each anonymous surface (SVC_ADDRESS_LIMITS). */
  addressLimits: AddressLimits;
  /** How often each node adds its per-address counts to the shared ones (SVC_ADDRESS_LIMIT_SYNC_MS). */
  addressLimitSyncMs: number;
  /** Where the public reports security problems (`/.well-known/security.txt`): a mailto: or https: URL. */
  securityContact?: string;
  /** Bearer token a Prometheus scraper sends to GET /metrics from another host (loopback only without it). */
  metricsToken?: string;
  /** On SIGTERM, how long requests in flight may take to finish before their connections are closed. */
  shutdownTimeoutMs: number;
  siteCacheTtlMs: number;
  /** A CDN in front of hosted sites (SVC_CDN_*; parsed by service/cdn/cdn-config.ts); null: none. */
  cdn: CdnConfig | null;
  /** log2 of scrypt's N for dashboard and site passwords (service/auth/passwords.ts). */
  passwordHashCost: number;
  /** `svc serve` also serves the MCP server (streamable HTTP, loopback) here; null = off. */
  mcpPort: number | null;
  limits: Limits;
  /** Versions of sites kept: the last `keepLast` and any newer than `keepDays` days (an account may set its own). */
  versions: { keepLast: number; keepDays: number };
  /** How often a node adds the site traffic it counted to the database (at least every 100 ms). */
  trafficFlushMs: number;
  functions: FunctionsConfig;
  oauth: OAuthConfig;
  dashboard: DashboardConfig;
  tables: TablesConfig;
  /** Data-file datasets (service/datasets; docs/datasets.md). */
  datasets: DatasetsConfig;
  /** Agent API payments (parsed by service/payments/x402-config.ts). */
  x402: X402Config;
}

export interface DatasetsConfig {
  /** Largest data file accepted by create_data_file_upload_url. */
  maxFileBytes: number;
  /** Files larger than this get a multipart upload; smaller ones one presigned PUT. */
  multipartThresholdBytes: number;
  /** Size of every multipart part but the last (S3: ≥ 5 MiB; raised as needed to stay ≤ 10,000 parts). */
  partBytes: number;
  /** Largest number of records loaded from one file. */
  maxRecords: number;
  /** Lifetime of upload URLs and upload tokens. */
  uploadTtlSeconds: number;
  /** Where conversions spool Parquet files and unzipped shapefiles. */
  tmpDir: string;
}

export interface ReplicasConfig {
  /** `postgres://…` of each replica; none: every read on the primary. */
  urls: string[];
  /** A replica further behind the primary than this is out of rotation until it catches up (SVC_REPLICA_MAX_LAG_MS). */
  maxLagMs: number;
  /** How long a read of a client that just wrote waits for a replica to replay its write before reading the primary (SVC_REPLICA_WAIT_MS). */
  waitMs: number;
  /** How often each node measures every replica's lag (SVC_REPLICA_CHECK_MS). */
  checkMs: number;
}

export interface TablesConfig {
  /** Upper bound of one Table API query (SET LOCAL statement_timeout); 0 = none. */
  statementTimeoutMs: number;
  maxTablesPerSite: number;
}

export interface OAuthConfig {
  accessTokenTtlSeconds: number;
  /** Each refresh token lives this long; rotation issues a fresh one with a fresh lifetime. */
  refreshTokenTtlSeconds: number;
  codeTtlSeconds: number;
  /** Development and tests only: Client ID Metadata Documents may be fetched over plain http from a loopback host. */
  loopbackClientMetadata: boolean;
}

export interface DashboardConfig {
  sessionTtlSeconds: number;
  signupEnabled: boolean;
}

export type X402Mode = 'dev' | 'chain' | 'remote';

export interface X402Config {
  /** dev: embedded anvil + test USDC; chain: settle on SVC_X402_RPC_URL; remote: SVC_X402_FACILITATOR_URL. */
  mode: X402Mode;
  /** Lower-case 0x address that receives payments. */
  recipient: string;
  rpcUrl?: string;
  settlerKey?: `0x${string}`;
  /**
   * Signs the offer-receipt extension's receipts (SVC_X402_RECEIPT_KEY, a 32-byte hex private key);
   * unset: a key derived from the service's own secret (same on every node, unique per deployment).
   */
  receiptKey?: `0x${string}`;
  /** `chain` mode: the settler's requests of one event-loop turn go as one JSON-RPC batch (SVC_X402_RPC_BATCH; off by default: not every node accepts batches). */
  rpcBatch: boolean;
  facilitatorUrl?: string;
  /** Optional `Authorization` header value for the remote facilitator. */
  facilitatorAuth?: string;
  /** Action name → decimal USDC price (catalogue defaults merged with SVC_X402_PRICES). */
  prices: Record<string, string>;
  /** Epoch ms of the latest price change: SVC_X402_PRICES_UPDATED_AT, else the catalogue's date. */
  pricesUpdatedAt: number;
  /** Validity window we ask clients to sign for (maxTimeoutSeconds). */
  maxTimeoutSeconds: number;
  /** Path to the anvil binary (dev mode); default: the one from @foundry-rs/anvil in node_modules. */
  anvilPath?: string;
  /** Dev mode: the dev chain's RPC port (SVC_DEV_CHAIN_PORT; default PORT + 2; 0 = any free port). */
  devChainPort: number;
  /**
   * Lower-case addresses of the smart-account factories an ERC-6492 signature may deploy through
   * before its first payment settles (SVC_X402_ERC6492_FACTORIES, comma-separated; none by default:
   * the settler would send the factory call, so only trusted factories are accepted).
   */
  erc6492Factories: string[];
}

/** How svc purges a CDN in front of hosted sites (SVC_CDN_PURGE). */
export type CdnPurgeKind = 'varnish' | 'fastly' | 'cloudflare' | 'webhook';

export interface CdnConfig {
  purge: CdnPurgeKind;
  /** How long a shared cache keeps a hosted file (s-maxage, CDN-Cache-Control), in seconds. */
  maxAgeSeconds: number;
  /**
   * Where purges go: the Varnish servers (each gets every purge), the webhook, or the API's base
   * (Fastly: https://api.fastly.com; Cloudflare: https://api.cloudflare.com/client/v4).
   */
  urls: string[];
  /** Fastly: its API token (Fastly-Key); Cloudflare: an API token with Cache Purge; webhook: a bearer token, optional. */
  token?: string;
  /** Fastly: the service ID; Cloudflare: the zone ID. */
  zone?: string;
}
