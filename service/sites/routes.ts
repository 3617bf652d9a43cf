import { readersOf } from '../http/read-your-writes.js';
import { createRoute } from '@hono/zod-openapi';
import {
  DeleteSiteResponseSchema,
  PublishSiteBodySchema,
  PublishSiteResponseSchema,
  SiteAccessBodySchema,
  SiteContentQuerySchema,
  SiteContentResponseSchema,
  SiteListQuerySchema,
  SiteListResponseSchema,
  SiteResponseSchema,
  WriteSiteFilesBodySchema,
} from '../../shared/account-api/sites.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { createApiRouter, errorResponses, securityFor, jsonBody, jsonResponse } from '../http/openapi.js';
import { accountOwner } from '../db/owner.js';
import { publishSite } from './publish.js';
import { siteFilesChange } from './inline-files.js';
import {
  changeSiteAccess,
  changeSiteFiles,
  deleteSite,
  deleteSiteBlobs,
  getChangeableSite,
  getOwnedSite,
  listOwnedSites,
  readSiteContent,
  viewSite,
} from './sites.js';
import { SiteIdParams } from '../../shared/account-api/operations.js';
import { FinalizeSiteUploadBodySchema, SiteUploadUrlsBodySchema, SiteUploadUrlsResponseSchema } from '../../shared/account-api/site-uploads.js';
import {
  RollbackBodySchema,
  RollbackResponseSchema,
  SiteVersionListQuerySchema,
  SiteVersionListResponseSchema,
  SiteVersionParams,
  SiteVersionResponseSchema,
} from '../../shared/account-api/site-versions.js';
import type { Principal } from '../kernel/request-env.js';
import { SiteTrafficQuerySchema, SiteTrafficResponseSchema } from '../../shared/account-api/site-traffic.js';
import { readSiteTraffic } from './traffic.js';
import type { VersionActor } from '../db/schema/site-versions.js';
import { getVersion, listVersions, rollbackSite } from './versions.js';
import { addUploadedFiles, checkArrivedFiles, checkUploadRequest, issueUploadUrls, readUploadToken } from './upload-urls.js';

const listSitesRoute = createRoute({
  method: 'get',
  path: '/sites',
  tags: ['Sites'],
  summary: 'List Sites',
  security: securityFor('svc.sites.read'),
  request: { query: SiteListQuerySchema },
  responses: { 200: jsonResponse(SiteListResponseSchema, 'Sites of the account, newest first'), ...errorResponses(400, 401, 403, 429) },
});

const publishSiteRoute = createRoute({
  method: 'post',
  path: '/sites',
  tags: ['Sites'],
  summary: 'Publish a new HTML Site',
  description: 'Idempotent per requestId: a repeat answers the first result (200, replayed: true) and creates nothing.',
  security: securityFor('svc.publish'),
  request: { body: jsonBody(PublishSiteBodySchema) },
  responses: {
    201: jsonResponse(PublishSiteResponseSchema, 'Published'),
    200: jsonResponse(PublishSiteResponseSchema, 'Replay of an earlier request with the same requestId'),
    ...errorResponses(400, 401, 403, 409, 413, 429),
  },
});

const getSiteRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}',
  tags: ['Sites'],
  summary: 'Site details',
  security: securityFor('svc.sites.read'),
  request: { params: SiteIdParams },
  responses: { 200: jsonResponse(SiteResponseSchema, 'The site'), ...errorResponses(401, 403, 404, 429) },
});

const changeSiteAccessRoute = createRoute({
  method: 'patch',
  path: '/sites/{siteId}',
  tags: ['Sites'],
  summary: 'Change visibility or password',
  description: 'A password makes the site private (served after a password prompt); making it public removes the password; null removes it.',
  security: securityFor('svc.sites.write'),
  request: { params: SiteIdParams, body: jsonBody(SiteAccessBodySchema) },
  responses: { 200: jsonResponse(SiteResponseSchema, 'The site after the change'), ...errorResponses(400, 401, 403, 404, 429) },
});

const deleteSiteRoute = createRoute({
  method: 'delete',
  path: '/sites/{siteId}',
  tags: ['Sites'],
  summary: 'Delete a Site',
  description: 'Removes the site, its files, Tables and datasets.',
  security: securityFor('svc.sites.write'),
  request: { params: SiteIdParams },
  responses: { 200: jsonResponse(DeleteSiteResponseSchema, 'Deleted'), ...errorResponses(401, 403, 404, 429) },
});

const readSiteContentRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}/content',
  tags: ['Sites'],
  summary: 'Read editable Site content',
  description: 'Text files of the site. Repeat `path` to pick files; with none, every text file (up to 5 MiB) is returned.',
  security: securityFor('svc.sites.read'),
  request: { params: SiteIdParams, query: SiteContentQuerySchema },
  responses: { 200: jsonResponse(SiteContentResponseSchema, 'Text content'), ...errorResponses(400, 401, 403, 404, 415, 429) },
});

const writeSiteFilesRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/files',
  tags: ['Sites'],
  summary: 'Create, replace or delete files of a Site',
  description:
    "Writes the files given (index.html too) into the site and deletes the paths listed in `delete`; its other files stay. All of it happens or none: a bad path, a path given twice, bad base64, a file to delete that is not there (or index.html, the entry point) or a file count or storage past the limits is refused before anything is stored. Not in the specification: svc adds it so that an account edits the sites it published, as the Agent API's update_app_file does for a wallet's.",
  security: securityFor('svc.sites.write'),
  request: { params: SiteIdParams, body: jsonBody(WriteSiteFilesBodySchema) },
  responses: { 200: jsonResponse(SiteResponseSchema, 'The site after the change'), ...errorResponses(400, 401, 403, 404, 413, 429) },
});

const siteUploadUrlsRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/upload-urls',
  tags: ['Sites'],
  summary: 'Get upload URLs for files of a Site',
  description:
    "One signed PUT URL per file (path, exact size, media type), for files no JSON body carries (large images, video, many files), as the Agent API's create_site_upload_urls does for a wallet's app; then `upload-urls/finalize`. Paths, types, sizes, the file count and storage are checked first. Not in the specification: svc adds it so that an account publishes files of any size.",
  security: securityFor('svc.sites.write'),
  request: { params: SiteIdParams, body: jsonBody(SiteUploadUrlsBodySchema) },
  responses: { 200: jsonResponse(SiteUploadUrlsResponseSchema, 'Where to PUT each file'), ...errorResponses(400, 401, 403, 404, 413, 429) },
});

const finalizeSiteUploadRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/upload-urls/finalize',
  tags: ['Sites'],
  summary: 'Add uploaded files to a Site',
  description:
    'Checks that each file arrived with the size and media type announced (the bytes, not only the header), then adds them all to the site, or none. A file not PUT yet is a 400 `not_uploaded`; finalize again once it is. Not in the specification.',
  security: securityFor('svc.sites.write'),
  request: { params: SiteIdParams, body: jsonBody(FinalizeSiteUploadBodySchema) },
  responses: { 200: jsonResponse(SiteResponseSchema, 'The site after the change'), ...errorResponses(400, 401, 403, 404, 429) },
});

const listVersionsRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}/versions',
  tags: ['Sites'],
  summary: 'List the versions of a Site',
  description:
    'Every publish and every change of the files (a rollback too) is a version; newest first, the one the site serves marked `current`. Each has a `previewUrl` serving exactly its files. Versions past the retention (the last N and any newer than D days) are pruned. Not in the specification.',
  security: securityFor('svc.sites.read'),
  request: { params: SiteIdParams, query: SiteVersionListQuerySchema },
  responses: { 200: jsonResponse(SiteVersionListResponseSchema, 'Versions, newest first'), ...errorResponses(400, 401, 403, 404, 429) },
});

const getVersionRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}/versions/{version}',
  tags: ['Sites'],
  summary: 'One version of a Site, with its files',
  description: 'Its file list and a `previewUrl` that serves exactly this version while the site keeps serving its current one. Not in the specification.',
  security: securityFor('svc.sites.read'),
  request: { params: SiteVersionParams },
  responses: { 200: jsonResponse(SiteVersionResponseSchema, 'The version'), ...errorResponses(400, 401, 403, 404, 429) },
});

const rollbackRoute = createRoute({
  method: 'post',
  path: '/sites/{siteId}/rollback',
  tags: ['Sites'],
  summary: 'Roll a Site back to a version',
  description:
    "Makes that version's files (and entry point) the site's in one step, served at once on every node; recorded as a new version, so a rollback can be rolled back. Idempotent per requestId: a repeat answers the version it made (200, replayed: true). Not in the specification.",
  security: securityFor('svc.sites.write'),
  request: { params: SiteIdParams, body: jsonBody(RollbackBodySchema) },
  responses: {
    201: jsonResponse(RollbackResponseSchema, 'Rolled back: the new version'),
    200: jsonResponse(RollbackResponseSchema, 'Replay of an earlier rollback with the same requestId'),
    ...errorResponses(400, 401, 403, 404, 409, 413, 429),
  },
});

const trafficRoute = createRoute({
  method: 'get',
  path: '/sites/{siteId}/traffic',
  tags: ['Sites'],
  summary: 'Traffic of a Site per day',
  description:
    'Requests and bytes the site served per UTC day over the last `days` days (both URL forms; its version previews apart). Each node adds what it counted every few seconds (`flushSeconds`): the last seconds may not show yet. Not in the specification.',
  security: securityFor('svc.sites.read'),
  request: { params: SiteIdParams, query: SiteTrafficQuerySchema },
  responses: { 200: jsonResponse(SiteTrafficResponseSchema, 'Per day, oldest first'), ...errorResponses(400, 401, 403, 404, 429) },
});

/** Who is making a change through the Account API: the account, through this credential. */
export function accountActor(principal: Principal): VersionActor {
  return { kind: 'account', accountId: principal.accountId, credential: { kind: principal.credential.kind, id: principal.credential.id } };
}

/** Account API: `/api/v1/sites…` (mounted under /api/v1). */
export function siteRoutes(deps: Deps) {
  const r = createApiRouter();
  const read = requireScope(deps, 'svc.sites.read');
  const publish = requireScope(deps, 'svc.publish');
  const write = requireScope(deps, 'svc.sites.write');
  r.openapi({ ...listSitesRoute, middleware: [read] as const }, async (c) => {
    const page = c.req.valid('query');
    // A listing may be a little behind, except for the account's own writes: on a replica past them (db/read-pools.ts).
    const route = deps.readPools.publicRead(readersOf(c, deps.config.trustProxy));
    const { sites, total } = await route.run((db) => listOwnedSites(deps, accountOwner(c.var.principal.accountId), page, db));
    return c.json({ ok: true as const, sites, total, ...page }, 200);
  });
  r.openapi({ ...publishSiteRoute, middleware: [publish] as const }, async (c) => {
    const result = await publishSite(deps, c.var.principal.accountId, c.req.valid('json'), accountActor(c.var.principal));
    return c.json({ ok: true as const, ...result }, result.replayed ? 200 : 201);
  });
  r.openapi({ ...getSiteRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    return c.json({ ok: true as const, site: await viewSite(deps, site) }, 200);
  });
  r.openapi({ ...changeSiteAccessRoute, middleware: [write] as const }, async (c) => {
    const site = await getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const row = await changeSiteAccess(deps, site, c.req.valid('json'));
    return c.json({ ok: true as const, site: await viewSite(deps, row) }, 200);
  });
  r.openapi({ ...writeSiteFilesRoute, middleware: [write] as const }, async (c) => {
    const change = siteFilesChange(c.req.valid('json'));
    const site = await getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const row = await changeSiteFiles(deps, site, change, accountActor(c.var.principal));
    return c.json({ ok: true as const, site: await viewSite(deps, row) }, 200);
  });
  r.openapi({ ...siteUploadUrlsRoute, middleware: [write] as const }, async (c) => {
    const site = await getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const { files } = c.req.valid('json');
    await checkUploadRequest(deps, site, files);
    return c.json({ ok: true as const, ...(await issueUploadUrls(deps, site, files)) }, 200);
  });
  r.openapi({ ...finalizeSiteUploadRoute, middleware: [write] as const }, async (c) => {
    const site = await getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const input = c.req.valid('json');
    const files = await checkArrivedFiles(deps, readUploadToken(deps, input.uploadToken, site), input);
    const row = await deps.db.transaction((tx) => addUploadedFiles(deps, site, files, undefined, accountActor(c.var.principal), tx));
    return c.json({ ok: true as const, site: await viewSite(deps, row) }, 200);
  });
  r.openapi({ ...deleteSiteRoute, middleware: [write] as const }, async (c) => {
    const site = await getChangeableSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    await deleteSite(deps, site);
    await deleteSiteBlobs(deps, site.id);
    return c.json({ ok: true as const, deleted: { id: site.id, slug: site.slug } }, 200);
  });
  r.openapi({ ...listVersionsRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    return c.json({ ok: true as const, ...(await listVersions(deps, site, c.req.valid('query'))) }, 200);
  });
  r.openapi({ ...getVersionRoute, middleware: [read] as const }, async (c) => {
    const { siteId, version } = c.req.valid('param');
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), siteId);
    return c.json({ ok: true as const, siteId: site.id, version: await getVersion(deps, site, version) }, 200);
  });
  r.openapi({ ...rollbackRoute, middleware: [write] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const result = await rollbackSite(deps, site, c.req.valid('json'), accountActor(c.var.principal));
    return c.json({ ok: true as const, siteId: site.id, version: result.version, replayed: result.replayed }, result.replayed ? 200 : 201);
  });
  r.openapi({ ...trafficRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    return c.json(await readSiteTraffic(deps, site.id, c.req.valid('query').days), 200);
  });
  r.openapi({ ...readSiteContentRoute, middleware: [read] as const }, async (c) => {
    const site = await getOwnedSite(deps.db, accountOwner(c.var.principal.accountId), c.req.valid('param').siteId);
    const paths = c.req.queries('path') ?? [];
    const content = await readSiteContent(deps, site, paths);
    return c.json({ ok: true as const, siteId: site.id, ...content }, 200);
  });
  return r;
}
