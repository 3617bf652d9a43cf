import { z } from 'zod';

/** Who made a version (no secret: a credential is named by its id). */
export const VersionActorSchema = z
  .union([
    z.object({
      kind: z.literal('account'),
      accountId: z.string(),
      credential: z.object({ kind: z.enum(['personal_key', 'oauth_token', 'dashboard_session']), id: z.string() }),
    }),
    z.object({ kind: z.literal('wallet'), wallet: z.string() }),
    z.object({ kind: z.literal('operator') }),
  ])
  .meta({ id: 'VersionActor' });

export const SiteVersionSchema = z
  .object({
    version: z.number().int().describe('1 for the first publish, +1 for every change of the files (a rollback too)'),
    current: z.boolean().describe('The version the site serves (always its newest)'),
    createdAt: z.string(),
    action: z.enum(['create', 'change', 'upload', 'rollback']),
    summary: z.string().describe('One line: what changed from the version before'),
    by: VersionActorSchema,
    fileCount: z.number().int(),
    bytes: z.number().int(),
    entryPoint: z.string(),
    rollbackOf: z.number().int().nullable().describe('The version a rollback restored'),
    previewUrl: z.string().describe('Serves exactly this version (path form, sandboxed; a private site asks for its password)'),
  })
  .meta({ id: 'SiteVersion' });

export const SiteVersionFileSchema = z.object({ path: z.string(), size: z.number().int(), contentType: z.string(), sha256: z.string() });

export const SiteVersionDetailSchema = SiteVersionSchema.extend({ files: z.array(SiteVersionFileSchema) }).meta({ id: 'SiteVersionDetail' });

export const SiteVersionListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(20).describe('Page size, 1–200 (default 20)'),
  offset: z.coerce.number().int().min(0).default(0),
});

export const SiteVersionListResponseSchema = z
  .object({
    ok: z.literal(true),
    siteId: z.string(),
    current: z.number().int().describe('The version the site serves'),
    versions: z.array(SiteVersionSchema).describe('Newest first'),
    total: z.number().int().describe('Versions kept (older ones are pruned by the retention setting)'),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'SiteVersionList' });

export const SiteVersionParams = z.object({
  siteId: z.string().min(1).describe('Site id or name (slug)'),
  version: z.coerce.number().int().min(1).describe('Version number'),
});

export const SiteVersionResponseSchema = z
  .object({ ok: z.literal(true), siteId: z.string(), version: SiteVersionDetailSchema })
  .meta({ id: 'SiteVersionResponse' });

export const RollbackBodySchema = z
  .object({
    version: z.number().int().min(1),
    requestId: z.string().min(1).max(200).optional().describe('Repeat it to get the first result'),
  })
  .meta({ id: 'RollbackBody' });

export const RollbackResponseSchema = z
  .object({
    ok: z.literal(true),
    siteId: z.string(),
    version: SiteVersionSchema.describe('The new version the rollback made (its files are those of the version restored)'),
    replayed: z.boolean(),
  })
  .meta({ id: 'RollbackResponse' });

export type RollbackBody = z.infer<typeof RollbackBodySchema>;
export type SiteVersionView = z.infer<typeof SiteVersionSchema>;
export type SiteVersionDetail = z.infer<typeof SiteVersionDetailSchema>;
