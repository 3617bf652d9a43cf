import { createRoute } from '@hono/zod-openapi';
import { UsageResponseSchema } from '../../shared/account-api/usage.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { createApiRouter, errorResponses, securityFor, jsonResponse } from '../http/openapi.js';
import { accountUsage } from './usage.js';

const usageRoute = createRoute({
  method: 'get',
  path: '/usage',
  tags: ['Usage'],
  summary: 'Account usage and limits',
  security: securityFor('svc.usage.read'),
  responses: {
    200: jsonResponse(UsageResponseSchema, 'Usage counters and the limits that apply'),
    ...errorResponses(401, 403, 429),
  },
});

export function usageRoutes(deps: Deps) {
  const r = createApiRouter();
  const read = requireScope(deps, 'svc.usage.read');
  r.openapi({ ...usageRoute, middleware: [read] as const }, async (c) => {
    const accountId = c.var.principal.accountId;
    const rpm = deps.config.limits.rateLimitPerMinute;
    return c.json({ ok: true as const, accountId, usage: await accountUsage(deps, accountId), rateLimit: { requestsPerMinute: rpm > 0 ? rpm : null } }, 200);
  });
  return r;
}
