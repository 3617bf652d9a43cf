import path from 'node:path';
import { z } from 'zod';
import { parseX402Config } from './payments/x402-config.js';
import { DEFAULT_PASSWORD_HASH_COST, PASSWORD_HASH_COSTS } from './auth/passwords.js';
import { parseAddressLimits } from './http/address-surfaces.js';
import { parseCdnConfig } from './cdn/cdn-config.js';
import type { Config } from './kernel/config.js';

const bool = z
  .string()
  .optional()
  .transform((v) => v === '1' || v?.toLowerCase() === 'true' || v?.toLowerCase() === 'yes');
const int = (dflt: number) => z.coerce.number().int().nonnegative().default(dflt);
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined));

/**
 * Every environment variable the service reads, validated once at start. Nothing else in the code
 * reads process.env: the parsed Config is passed down explicitly. README's configuration table
 * mirrors this schema.
 */
const EnvSchema = z.object({
  PORT: int(8787),
  SVC_HOST: z.string().default('127.0.0.1'),
  SVC_BASE_URL: optionalText,
  SVC_SITES_DOMAIN: optionalText,
  SVC_DATA_DIR: z.string().default('./.svc'),
  DATABASE_URL: optionalText,
  // 0 would open no connection: every query would wait for good. 1 works (each pool's queries take turns).
  SVC_DATABASE_POOL_MAX: z.coerce.number().int().min(1, 'at least 1 connection per pool').default(10),
  DATABASE_READ_URL: optionalText,
  SVC_REPLICA_MAX_LAG_MS: int(1000),
  SVC_REPLICA_WAIT_MS: int(100),
  SVC_REPLICA_CHECK_MS: int(250),
  SVC_PGLITE_SHARED_BUFFERS: z
    .string()
    .regex(/^[1-9]\d*(kB|MB|GB)$/, 'a size such as 32MB (kB, MB or GB)')
    .optional(),
  S3_ENDPOINT: optionalText,
  S3_BUCKET: optionalText,
  S3_REGION: z.string().default('us-east-1'),
  S3_ACCESS_KEY_ID: optionalText,
  S3_SECRET_ACCESS_KEY: optionalText,
  S3_FORCE_PATH_STYLE: bool,
  SVC_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  SVC_TRUST_PROXY: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const t = v?.trim().toLowerCase() ?? '';
      if (t === '' || t === '0' || t === 'false' || t === 'no') return 0;
      if (t === 'true' || t === 'yes') return 1;
      if (/^[1-9]$/.test(t)) return Number(t);
      ctx.addIssue({ code: 'custom', message: 'true (one proxy in front) or the number of proxies in front, 1-9' });
      return z.NEVER;
    }),
  SVC_ADDRESS_LIMITS: optionalText,
  SVC_ADDRESS_LIMIT_SYNC_MS: int(1000),
  SVC_SECURITY_CONTACT: optionalText,
  SVC_METRICS_TOKEN: optionalText,
  SVC_SHUTDOWN_TIMEOUT_SECONDS: int(25),
  SVC_SITE_CACHE_TTL_MS: int(30_000),
  SVC_CDN_PURGE: optionalText,
  SVC_CDN_MAX_AGE: z.coerce.number().int().min(1).optional(),
  SVC_CDN_PURGE_URL: optionalText,
  SVC_CDN_PURGE_TOKEN: optionalText,
  SVC_CDN_ZONE: optionalText,
  SVC_VERSIONS_KEEP_LAST: int(20),
  SVC_VERSIONS_KEEP_DAYS: int(30),
  SVC_TRAFFIC_FLUSH_MS: int(5_000),
  SVC_RATE_LIMIT_PER_MINUTE: int(600),
  SVC_MAX_SITES_PER_ACCOUNT: int(100),
  SVC_MAX_FILES_PER_SITE: int(1000),
  SVC_MAX_FILE_BYTES: int(25 * 1024 * 1024),
  SVC_MAX_STORAGE_BYTES: int(1024 * 1024 * 1024),
  SVC_MAX_JSON_BODY_BYTES: int(1024 * 1024),
  SVC_MAX_FUNCTIONS_PER_ACCOUNT: int(100),
  SVC_FUNCTION_MAX_CODE_BYTES: int(256 * 1024),
  SVC_FUNCTION_MEMORY_MB: int(64),
  SVC_FUNCTION_CPU_MS: int(500),
  SVC_FUNCTION_TIMEOUT_MS: int(5000),
  SVC_FUNCTION_INVOKES_PER_MINUTE: int(120),
  SVC_MAX_FUNCTION_INVOCATIONS_PER_MONTH: int(100_000),
  SVC_FUNCTION_WORKERS: int(4),
  SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS: int(900),
  SVC_OAUTH_REFRESH_TOKEN_TTL_SECONDS: int(30 * 24 * 3600),
  SVC_OAUTH_CODE_TTL_SECONDS: int(60),
  SVC_OAUTH_LOOPBACK_CLIENT_METADATA: optionalText,
  SVC_SESSION_TTL_SECONDS: int(7 * 24 * 3600),
  SVC_SIGNUP_DISABLED: bool,
  SVC_PASSWORD_HASH_COST: z.coerce.number().int().min(PASSWORD_HASH_COSTS.min).max(PASSWORD_HASH_COSTS.max).default(DEFAULT_PASSWORD_HASH_COST),
  SVC_TABLE_STATEMENT_TIMEOUT_MS: int(5000),
  SVC_MAX_TABLES_PER_SITE: int(100),
  SVC_DATASET_MAX_FILE_BYTES: int(2 * 1024 * 1024 * 1024),
  SVC_DATASET_MULTIPART_THRESHOLD_BYTES: int(64 * 1024 * 1024),
  SVC_DATASET_PART_BYTES: int(16 * 1024 * 1024),
  SVC_DATASET_MAX_RECORDS: int(5_000_000),
  SVC_DATASET_UPLOAD_TTL_SECONDS: int(3600),
  SVC_X402_MODE: optionalText,
  SVC_X402_RECIPIENT: optionalText,
  SVC_X402_RPC_URL: optionalText,
  SVC_X402_SETTLER_KEY: optionalText,
  SVC_X402_RECEIPT_KEY: optionalText,
  SVC_X402_RPC_BATCH: bool,
  SVC_X402_FACILITATOR_URL: optionalText,
  SVC_X402_FACILITATOR_AUTH: optionalText,
  SVC_X402_PRICES: optionalText,
  SVC_X402_PRICES_UPDATED_AT: optionalText,
  SVC_X402_MAX_TIMEOUT_SECONDS: optionalText,
  SVC_X402_ANVIL_PATH: optionalText,
  SVC_X402_ERC6492_FACTORIES: optionalText,
  SVC_DEV_CHAIN_PORT: optionalText,
  SVC_MCP_PORT: optionalText,
});

export type Env = z.input<typeof EnvSchema>;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const baseUrl = (e.SVC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new Error(`invalid configuration:\n  SVC_BASE_URL: not a URL: ${baseUrl}`);
  }
  if (e.DATABASE_READ_URL && !e.DATABASE_URL)
    throw new Error('invalid configuration:\n  DATABASE_READ_URL: replicas of a PostgreSQL primary need DATABASE_URL');
  if (e.S3_ENDPOINT && !e.S3_BUCKET) throw new Error('invalid configuration:\n  S3_BUCKET: required when S3_ENDPOINT is set');
  return {
    port: e.PORT,
    host: e.SVC_HOST,
    baseUrl,
    sitesDomain: (e.SVC_SITES_DOMAIN ?? base.hostname).toLowerCase(),
    dataDir: path.resolve(e.SVC_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: e.SVC_DATABASE_POOL_MAX,
    replicas: {
      urls: (e.DATABASE_READ_URL ?? '')
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean),
      maxLagMs: e.SVC_REPLICA_MAX_LAG_MS,
      waitMs: e.SVC_REPLICA_WAIT_MS,
      checkMs: Math.max(10, e.SVC_REPLICA_CHECK_MS),
    },
    pgliteSharedBuffers: e.SVC_PGLITE_SHARED_BUFFERS,
    s3: e.S3_BUCKET
      ? {
          endpoint: e.S3_ENDPOINT,
          bucket: e.S3_BUCKET,
          region: e.S3_REGION,
          accessKeyId: e.S3_ACCESS_KEY_ID,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY,
          forcePathStyle: e.S3_FORCE_PATH_STYLE,
        }
      : undefined,
    logLevel: e.SVC_LOG_LEVEL,
    trustProxy: e.SVC_TRUST_PROXY,
    addressLimits: parseAddressLimits(e.SVC_ADDRESS_LIMITS),
    addressLimitSyncMs: e.SVC_ADDRESS_LIMIT_SYNC_MS,
    securityContact: parseSecurityContact(e.SVC_SECURITY_CONTACT),
    metricsToken: e.SVC_METRICS_TOKEN,
    shutdownTimeoutMs: e.SVC_SHUTDOWN_TIMEOUT_SECONDS * 1000,
    siteCacheTtlMs: e.SVC_SITE_CACHE_TTL_MS,
    cdn: parseCdnConfig(e),
    passwordHashCost: e.SVC_PASSWORD_HASH_COST,
    mcpPort: parseMcpPort(e.SVC_MCP_PORT, e.PORT),
    limits: {
      rateLimitPerMinute: e.SVC_RATE_LIMIT_PER_MINUTE,
      maxSitesPerAccount: e.SVC_MAX_SITES_PER_ACCOUNT,
      maxFilesPerSite: e.SVC_MAX_FILES_PER_SITE,
      maxFileBytes: e.SVC_MAX_FILE_BYTES,
      maxStorageBytes: e.SVC_MAX_STORAGE_BYTES,
      maxJsonBodyBytes: e.SVC_MAX_JSON_BODY_BYTES,
    },
    versions: { keepLast: Math.max(1, e.SVC_VERSIONS_KEEP_LAST), keepDays: e.SVC_VERSIONS_KEEP_DAYS },
    trafficFlushMs: e.SVC_TRAFFIC_FLUSH_MS,
    functions: {
      maxFunctionsPerAccount: e.SVC_MAX_FUNCTIONS_PER_ACCOUNT,
      maxCodeBytes: e.SVC_FUNCTION_MAX_CODE_BYTES,
      memoryBytes: Math.max(1, e.SVC_FUNCTION_MEMORY_MB) * 1024 * 1024,
      cpuMs: Math.max(1, e.SVC_FUNCTION_CPU_MS),
      timeoutMs: Math.max(1, e.SVC_FUNCTION_TIMEOUT_MS),
      invokesPerMinute: e.SVC_FUNCTION_INVOKES_PER_MINUTE,
      maxInvocationsPerMonth: e.SVC_MAX_FUNCTION_INVOCATIONS_PER_MONTH,
      workers: e.SVC_FUNCTION_WORKERS,
    },
    oauth: {
      accessTokenTtlSeconds: Math.max(1, e.SVC_OAUTH_ACCESS_TOKEN_TTL_SECONDS),
      refreshTokenTtlSeconds: Math.max(1, e.SVC_OAUTH_REFRESH_TOKEN_TTL_SECONDS),
      codeTtlSeconds: Math.max(1, e.SVC_OAUTH_CODE_TTL_SECONDS),
      loopbackClientMetadata: e.SVC_OAUTH_LOOPBACK_CLIENT_METADATA === '1',
    },
    dashboard: { sessionTtlSeconds: Math.max(60, e.SVC_SESSION_TTL_SECONDS), signupEnabled: !e.SVC_SIGNUP_DISABLED },
    tables: { statementTimeoutMs: e.SVC_TABLE_STATEMENT_TIMEOUT_MS, maxTablesPerSite: e.SVC_MAX_TABLES_PER_SITE },
    datasets: {
      maxFileBytes: e.SVC_DATASET_MAX_FILE_BYTES,
      multipartThresholdBytes: Math.max(5 * 1024 * 1024, e.SVC_DATASET_MULTIPART_THRESHOLD_BYTES),
      partBytes: Math.min(128 * 1024 * 1024, Math.max(5 * 1024 * 1024, e.SVC_DATASET_PART_BYTES)),
      maxRecords: Math.max(1, e.SVC_DATASET_MAX_RECORDS),
      uploadTtlSeconds: Math.max(60, e.SVC_DATASET_UPLOAD_TTL_SECONDS),
      tmpDir: path.join(path.resolve(e.SVC_DATA_DIR), 'tmp'),
    },
    x402: parseX402Config(e),
  };
}

/** `SVC_MCP_PORT`: a port, `off`, or unset = the service's port + 1 (a free port when PORT is 0). */
function parseMcpPort(value: string | undefined, servicePort: number): number | null {
  if (value === undefined) return servicePort === 0 || servicePort === 65535 ? 0 : servicePort + 1;
  if (value.toLowerCase() === 'off') return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`invalid configuration:\n  SVC_MCP_PORT: a port number or "off", not "${value}"`);
  return n;
}

/** `SVC_SECURITY_CONTACT`: a mailto: or https: URL (RFC 9116 Contact), or a bare email address made a mailto:. */
function parseSecurityContact(value: string | undefined): string | undefined {
  if (!value) return undefined;
  if (/^[^\s@:/]+@[^\s@/]+$/.test(value)) return `mailto:${value}`;
  if (/^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/.test(value)) return value;
  throw new Error(`invalid configuration:\n  SVC_SECURITY_CONTACT: a mailto: or https: URL, or an email address, not "${value}"`);
}
