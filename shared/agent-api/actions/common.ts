import { z } from 'zod';

/** Shared building blocks of the action declarations. */
export const NoParams = z.object({});
export const NoBody = z.object({});
export const SiteParams = z.object({ siteId: z.string().min(1).max(100).describe('Site id or name (appId or appName in results)') });

export const VisibilitySchema = z.enum(['private', 'public']);

/** Upload limits the agent upload actions enforce (the service may lower the per-file size further). */
export const SITE_UPLOAD_MAX_FILES = 100;
export const SITE_UPLOAD_URL_TTL_SECONDS = 900;

/** The `app` object of the Agent API (spec: appId + status; the other fields are ours). */
export const AgentAppResultSchema = z
  .object({
    appId: z.string(),
    status: z.enum(['created', 'updated', 'published', 'deleted']).describe('The transition this call made'),
    appName: z.string().describe('Slug of the app (its host label)'),
    visibility: VisibilitySchema,
    published: z.boolean().describe('Whether the app is served at its URL'),
    pathUrl: z.string().describe('The app on the service host ({base_url}/s/<appName>/); resolves from any HTTP client'),
    url: z.string().describe('Host-based address of the same app (needs wildcard DNS)'),
  })
  .meta({ id: 'AgentApp' });

export const AgentAppResponseSchema = z.object({ ok: z.literal(true), app: AgentAppResultSchema });
