import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { publicCors } from './http/cors.js';
import { abuseRoutes } from './abuse/routes.js';
import { adminRoutes } from './admin/routes.js';
import { agentRoutes } from './agent/routes.js';
import { PAYMENT_REQUEST_HEADERS, PAYMENT_RESPONSE_HEADERS } from './payments/cors.js';
import type { Deps } from './deps.js';
import { registerAccountApiDocs } from './discovery/account-api-doc.js';
import { functionRoutes } from './functions/routes.js';
import { AppError } from './kernel/app-error.js';
import { requireJsonBody } from './http/json-body.js';
import type { AppEnv } from './kernel/request-env.js';
import { respondWithError } from './http/handle-error.js';
import { requestLog } from './http/request-log.js';
import { limitByAddress } from './http/limit-by-address.js';
import type { AddressSurface } from './kernel/config.js';
import { healthRoutes } from './http/health.js';
import { createApiRouter } from './http/openapi.js';
import { datasetRoutes } from './datasets/routes.js';
import { consentRoutes } from './dashboard/consent.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { oauthRoutes } from './oauth/routes.js';
import { siteHostMiddleware, sitePathRoutes } from './sites/serving.js';
import { purgeAfterChanges } from './cdn/purge-outbox.js';
import { recordWrites } from './http/read-your-writes.js';
import { siteRoutes } from './sites/routes.js';
import { tableRoutes } from './tables/routes.js';
import { TABLE_API_CORS, tableApiRoutes } from './tables/table-api.js';
import { LocalBlobStore } from './storage/local-store.js';
import { metricsRoutes } from './metrics/routes.js';
import { localUploadRoutes } from './storage/upload-routes.js';
import { usageRoutes } from './usage/routes.js';
import { SERVICE_VERSION } from './kernel/version.js';
import { agentHandlers } from './agent-handlers.js';

export interface BuildAppOptions {
  /** Token of the loopback admin endpoint used by the CLI; no admin endpoint when omitted. */
  adminToken?: string;
  /** True once the process is stopping (SIGTERM): /readyz answers 503 so load balancers move on. */
  isStopping?: () => boolean;
}

const BODILESS_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Builds the whole HTTP service from its dependencies. No I/O happens here. */
export function buildApp(deps: Deps, options: BuildAppOptions = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use('*', requestLog(deps));
  app.use('*', purgeAfterChanges(deps.purges));
  app.use('*', recordWrites(deps));
  // Hosted sites on their own hosts come first: `<slug>.<domain>/…` never reaches the API routes.
  app.use('*', siteHostMiddleware(deps));
  app.route('/', sitePathRoutes(deps));
  if (deps.blobs instanceof LocalBlobStore) app.route('/', localUploadRoutes(deps, deps.blobs));
  guardApiRequests(app, deps);
  limitAnonymousSurfaces(app, deps);
  app.route('/api/v1', accountApi(deps));
  app.route('/', agentRoutes(deps, agentHandlers));
  app.route('/', tableApiRoutes(deps));
  app.route('/', oauthRoutes(deps));
  app.route('/', consentRoutes(deps));
  app.route('/', dashboardRoutes(deps));
  app.route('/', abuseRoutes(deps));
  if (options.adminToken) app.route('/', adminRoutes(deps, options.adminToken));
  app.route('/', metricsRoutes(deps));
  app.get('/', (c) =>
    c.json({
      ok: true,
      name: 'svc',
      version: SERVICE_VERSION,
      accountApi: `${deps.config.baseUrl}/api/v1`,
      openapi: `${deps.config.baseUrl}/api/v1/openapi.json`,
      agentApi: `${deps.config.baseUrl}/api/x402`,
      dashboard: `${deps.config.baseUrl}/dashboard`,
    }),
  );
  app.route('/', healthRoutes(deps, options.isStopping ?? (() => false)));
  app.notFound((c) => respondWithError(c, new AppError('not_found', `no route for ${c.req.method} ${c.req.path}${whereRoutesAreListed(c.req.path)}`)));
  app.onError((err, c) => respondWithError(c, err, deps.log));
  return app;
}

/** CORS and the body-size limit of everything under /api. */
function guardApiRequests(app: Hono<AppEnv>, deps: Deps): void {
  // CORS: the Table API's own (its key headers) alone answers /api/data/*, the generic one the rest.
  app.use('/api/data/*', TABLE_API_CORS);
  const apiCors = publicCors({
    allowHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id', ...PAYMENT_REQUEST_HEADERS],
    allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    exposeHeaders: ['X-Request-Id', 'Retry-After', 'WWW-Authenticate', ...PAYMENT_RESPONSE_HEADERS],
    maxAge: 600,
  });
  app.use('/api/*', (c, next) => (c.req.path.startsWith('/api/data/') ? next() : apiCors(c, next)));
  const maxBytes = deps.config.limits.maxJsonBodyBytes;
  const tooLarge = () => {
    // The rest of the body is never read, so the connection cannot be reused: say so.
    throw new AppError('payload_too_large', `request body exceeds ${maxBytes} bytes`, { maxBytes }, { connection: 'close' });
  };
  const limitBody = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  // Asking a request for its body makes @hono/node-server build a whole fetch Request (a third of a
  // Table API read's CPU, a tenth of a write's): a bodiless GET is not measured, and a declared length
  // is checked as it is (Node's parser holds the body to it). Only a chunked body is counted as read.
  app.use('/api/*', (c, next) => {
    if (BODILESS_METHODS.has(c.req.method)) return next();
    const declared = c.req.header('content-length');
    if (declared === undefined || c.req.header('transfer-encoding') !== undefined) return limitBody(c, next);
    return Number(declared) > maxBytes ? tooLarge() : next();
  });
}

/** Per-address limits of the surfaces anyone reaches without a credential (docs/public-operation.md). */
function limitAnonymousSurfaces(app: Hono<AppEnv>, deps: Deps): void {
  app.use(
    '/api/*',
    limitByAddress(deps, (c) => anonymousSurfaceOf(c.req.method, c.req.path)),
  );
}

function anonymousSurfaceOf(method: string, path: string): AddressSurface | null {
  if (method === 'OPTIONS') return null;
  if (path === '/api/x402' || path.startsWith('/api/x402/')) return 'agent';
  if (path.startsWith('/api/data/')) return BODILESS_METHODS.has(method) ? 'table-read' : 'table-write';
  if (method === 'POST' && path.startsWith('/api/v1/functions/invoke/')) return 'invoke';
  return null;
}

/** The Account API under /api/v1, with its OpenAPI document. */
function accountApi(deps: Deps) {
  const v1 = createApiRouter();
  v1.use('*', requireJsonBody());
  registerAccountApiDocs(v1, deps);
  v1.route('/', usageRoutes(deps));
  v1.route('/', siteRoutes(deps));
  v1.route('/', functionRoutes(deps));
  v1.route('/', tableRoutes(deps));
  v1.route('/', datasetRoutes(deps));
  return v1;
}

/** For a path under an API with a catalogue: where its routes are listed. */
function whereRoutesAreListed(path: string): string {
  if (path === '/api/x402' || path.startsWith('/api/x402/')) return ': GET /api/x402 lists every action with its method, path and price';
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return ': GET /api/v1/openapi.json describes every route';
  return '';
}
