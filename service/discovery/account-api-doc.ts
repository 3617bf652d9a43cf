import type { OpenAPIHono } from '@hono/zod-openapi';
import { z } from 'zod';
import { SCOPE_DESCRIPTIONS, SCOPES } from '../../shared/scopes.js';
import type { Deps } from '../deps.js';
import type { AppEnv } from '../kernel/request-env.js';
import { SERVICE_VERSION } from '../kernel/version.js';
import { closeRequestBodies } from './closed-request-bodies.js';

export const DiscoverySchema = z
  .object({
    ok: z.literal(true),
    name: z.string(),
    version: z.string(),
    description: z.string(),
    links: z.object({
      openapi: z.string().url(),
      accountApi: z.string().url(),
      agentApi: z.string().url(),
      tableApi: z.string().describe('URL template of a Table API'),
      sites: z.string().describe('URL template of a hosted site'),
      oauthAuthorizationServer: z.string().url(),
    }),
    scopes: z.array(z.object({ scope: z.string(), description: z.string() })),
  })
  .meta({ id: 'Discovery' });

/** `GET /api/v1` (discovery) and `GET /api/v1/openapi.json`, both public. */
export function registerAccountApiDocs(v1: OpenAPIHono<AppEnv>, deps: Deps): void {
  const base = deps.config.baseUrl;
  const { protocol, port } = new URL(base);
  v1.openAPIRegistry.registerComponent('securitySchemes', 'personalKey', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'svc_pat_<secret>',
    description:
      'Personal API key created with `svc-agent-host key create` (`npm run svc -- key create` in a clone) or in the dashboard; its scopes limit what it may do.',
  });
  v1.openAPIRegistry.registerComponent('securitySchemes', 'oauth2', {
    type: 'oauth2',
    description: 'OAuth 2.0 Authorization Code with PKCE (S256). Register clients at /api/oauth/register.',
    flows: {
      authorizationCode: {
        authorizationUrl: `${base}/oauth/authorize`,
        tokenUrl: `${base}/oauth/token`,
        refreshUrl: `${base}/oauth/token`,
        scopes: SCOPE_DESCRIPTIONS,
      },
    },
  });

  v1.get('/', (c) =>
    c.json({
      ok: true as const,
      name: 'svc',
      version: SERVICE_VERSION,
      description: 'Site hosting for AI agents: sites, Tables, datasets and Functions, with a pay-per-call Agent API.',
      links: {
        openapi: `${base}/api/v1/openapi.json`,
        accountApi: `${base}/api/v1`,
        agentApi: `${base}/api/x402`,
        tableApi: `${protocol}//<site_slug>.${deps.config.sitesDomain}${port ? `:${port}` : ''}/api/data/<site_slug>/<table_slug>`,
        sites: `${protocol}//<site_slug>.${deps.config.sitesDomain}${port ? `:${port}` : ''}/`,
        oauthAuthorizationServer: `${base}/.well-known/oauth-authorization-server`,
      },
      scopes: SCOPES.map((scope) => ({ scope, description: SCOPE_DESCRIPTIONS[scope] })),
    } satisfies z.infer<typeof DiscoverySchema>),
  );

  const document: Parameters<typeof v1.getOpenAPI31Document>[0] = {
    openapi: '3.1.0',
    info: {
      title: 'svc Account API',
      version: SERVICE_VERSION,
      description:
        'Publish and manage Sites, Tables, datasets and Functions with a personal key (`Authorization: Bearer svc_pat_…`) or an OAuth access token. Every error has the body `{ ok: false, error: { code, message, details?, requestId? } }`. A request body may name only the fields its schema declares (another is a 400 naming it).',
    },
    servers: [{ url: `${base}/api/v1` }],
    tags: [{ name: 'Sites' }, { name: 'Usage' }],
  };
  // zod-openapi's own `doc31`, and then what the runtime does with fields a request body does not declare.
  v1.get('/openapi.json', (c) => c.json(closeRequestBodies(v1.getOpenAPI31Document(document))));
}
