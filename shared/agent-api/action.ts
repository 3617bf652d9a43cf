import type { z } from 'zod';

/**
 * One Agent API action, declared once. The service's `/api/x402` routes, the discovery document,
 * `GET /api/x402/pricing`, and the MCP tools are all generated from the catalogue of these
 * (shared/agent-api/catalogue.ts). A price or a field exists only here.
 */
export interface AgentAction<P extends z.ZodObject = z.ZodObject, I extends z.ZodType = z.ZodType, O extends z.ZodObject = z.ZodObject> {
  /** `x402.create_app_from_html` — the MCP tool name is this without `x402.`. */
  name: `x402.${string}`;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Hono-style path, e.g. `/api/x402/apps/:siteId/files`. */
  path: string;
  /** Default price, decimal USDC string ("0.007"); "0" for free actions. Deployments may override. */
  price: string;
  description: string;
  /** Path parameters (`:siteId` → `siteId`). */
  params: P;
  /** JSON body for POST/PATCH (an empty object schema when there is none). */
  input: I;
  /** Success body (without `receipt`, which every paid answer adds). */
  output: O;
  /** Whether the caller's wallet identity is needed (paid actions, and free ones such as list_apps). */
  identity: boolean;
  /** Tool hints: reads only / may delete / same call twice = same effect. */
  readOnly: boolean;
  destructive: boolean;
  idempotent: boolean;
}
