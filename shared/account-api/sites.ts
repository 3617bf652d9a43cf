import { z } from 'zod';

/** An operator's takedown of a site, as its owner sees it; null while the site is served. */
export const SiteSuspensionSchema = z
  .object({
    cause: z.enum(['site', 'owner']).describe('site: this site was suspended; owner: its account is suspended or its wallet blocked'),
    reason: z.string().describe("The operator's reason"),
    suspendedAt: z.string().datetime().nullable().describe('When the site itself was suspended (null for an owner suspension)'),
  })
  .describe('Set while the operator has the site suspended: it answers 451 with a neutral notice, its Table API too; nothing is deleted')
  .meta({ id: 'SiteSuspension' });

export const SiteSchema = z
  .object({
    id: z.string().describe('Site identifier (siteId)'),
    slug: z.string().describe('Short name, also the host label'),
    pathUrl: z.string().url().describe('Path URL on the service host: {base_url}/s/<slug>/ (resolves from any HTTP client)'),
    url: z
      .string()
      .url()
      .describe('Host-based address: https://<slug>.<sites domain>/ (needs wildcard DNS; *.localhost resolves in browsers, not in every client)'),
    visibility: z.enum(['public', 'private']),
    hasPassword: z.boolean().describe('Private sites with a password are served after a password prompt'),
    published: z.boolean().describe('Whether the site is served at its URL'),
    status: z.enum(['created', 'updated', 'published']).describe('Last state transition'),
    entryPoint: z.string().describe('File served for "/"'),
    fileCount: z.number().int(),
    bytes: z.number().int().describe('Total size of the site files'),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    suspension: SiteSuspensionSchema.nullable(),
  })
  .meta({ id: 'Site' });

export const InlineSiteFileSchema = z
  .object({
    path: z.string().min(1).max(512).describe('Path in the site: index.html, css/app.css…'),
    content: z.string().describe('The file: UTF-8 text, or base64 when encoding is "base64"'),
    encoding: z.enum(['utf8', 'base64']).optional().describe('How content is written (default utf8)'),
    contentType: z.string().max(200).optional().describe('Media type; from the extension when omitted'),
  })
  .meta({ id: 'InlineSiteFile' });
export type InlineSiteFile = z.infer<typeof InlineSiteFileSchema>;

export const PublishSiteBodySchema = z
  .object({
    requestId: z.string().min(1).max(200).describe('Unique per publish request; repeating it returns the first result and creates nothing'),
    html: z.string().min(1).describe('Complete HTML document served as index.html'),
    files: z
      .array(InlineSiteFileSchema)
      .optional()
      .describe('Other files of the site (css, js, images…), inline; the whole request is limited to the JSON body limit (1 MiB by default)'),
    slug: z.string().optional().describe('Desired short name (DNS label); a readable free name is chosen when omitted'),
  })
  .meta({ id: 'PublishSiteRequest' });
export type PublishSiteBody = z.infer<typeof PublishSiteBodySchema>;

export const PublishSiteResponseSchema = z
  .object({
    ok: z.literal(true),
    site: SiteSchema,
    replayed: z.boolean().describe('True when this requestId was seen before and the first result is returned'),
  })
  .meta({ id: 'PublishSiteResponse' });

export const WriteSiteFilesBodySchema = z
  .object({
    files: z.array(InlineSiteFileSchema).optional().describe("Files to create or replace (index.html too); the site's other files stay"),
    delete: z.array(z.string().min(1).max(512)).optional().describe('Paths of files to delete (not index.html, which is replaced instead)'),
  })
  .meta({ id: 'WriteSiteFilesRequest' });
export type WriteSiteFilesBody = z.infer<typeof WriteSiteFilesBodySchema>;

/** Visibility and password of a site: the same rule for the Account API and the Agent API (update_app_meta). */
export const SiteAccessBodySchema = z
  .object({
    visibility: z.enum(['private', 'public']).optional(),
    password: z.string().min(1).max(200).nullable().optional().describe('Makes the site private behind this password; null removes it'),
  })
  .refine((b) => b.visibility !== undefined || b.password !== undefined, { message: 'give visibility and/or password' })
  .meta({ id: 'SiteAccessRequest' });
export type SiteAccessBody = z.infer<typeof SiteAccessBodySchema>;

export const SiteListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1–200 (default 50)'),
  offset: z.coerce.number().int().min(0).default(0),
});

export const SiteListResponseSchema = z
  .object({ ok: z.literal(true), sites: z.array(SiteSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: 'SiteList' });

export const SiteResponseSchema = z.object({ ok: z.literal(true), site: SiteSchema }).meta({ id: 'SiteResponse' });

export const DeleteSiteResponseSchema = z
  .object({ ok: z.literal(true), deleted: z.object({ id: z.string(), slug: z.string() }) })
  .meta({ id: 'DeleteSiteResponse' });

export const SiteContentQuerySchema = z.object({
  path: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('Repeatable file path; with none, every text file is returned'),
});

export const SiteContentResponseSchema = z
  .object({
    ok: z.literal(true),
    siteId: z.string(),
    files: z.array(z.object({ path: z.string(), contentType: z.string(), size: z.number().int(), content: z.string().describe('UTF-8 text') })),
    truncated: z.boolean().describe('True when more text exists than one answer carries (5 MiB); ask for paths'),
  })
  .meta({ id: 'SiteContent' });
