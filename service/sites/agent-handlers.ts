import {
  createAppFromHtml,
  createSiteUploadUrls,
  deleteApp,
  finalizeSiteUpload,
  listApps,
  publishApp,
  suggestSiteName,
  unpublishApp,
  updateAppFile,
  updateAppMeta,
} from '../../shared/agent-api/actions/apps.js';
import { listAppVersions, rollbackApp, getAppTraffic } from '../../shared/agent-api/actions/app-versions.js';
import { asc, desc } from 'drizzle-orm';
import { handlerFor } from '../agent/typed-handler.js';
import type { TouchedApp } from '../agent/handler.js';
import { sites } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { isValidContentType } from '../../shared/content-types.js';
import { ownedBy, walletOwner } from '../db/owner.js';
import {
  assertCanWriteFile,
  assertAccessChange,
  changeSiteAccess,
  createSite,
  deleteSite,
  deleteSiteBlobs,
  getWalletApp,
  isSlugTaken,
  suggestAvailableSlug,
  toSiteView,
  updateSite,
  viewSite,
  writeSiteFile,
  type SiteRow,
} from './sites.js';
import { SlugSchema } from './slugs.js';
import { readSiteTraffic } from './traffic.js';
import { assertCanRollBack, listVersions, rollbackSite } from './versions.js';
import { addUploadedFiles, checkArrivedFiles, checkUploadRequest, issueUploadUrls, readUploadToken, sitePath } from './upload-urls.js';

type AppStatus = 'created' | 'updated' | 'published' | 'deleted';

function touched(row: SiteRow): TouchedApp {
  return { id: row.id, slug: row.slug, visibility: row.visibility };
}

function appResult(deps: Deps, row: SiteRow, status: AppStatus) {
  const view = toSiteView(deps.config, row);
  return {
    app: {
      appId: row.id,
      status,
      appName: row.slug,
      visibility: row.visibility,
      published: status === 'deleted' ? false : row.published,
      pathUrl: view.pathUrl,
      url: view.url,
    },
  };
}

// ── handlers ───────────────────────────────────────────────────────────────────────────────────────

export const appAgentHandlers = {
  [suggestSiteName.name]: handlerFor(suggestSiteName, {
    async run({ tx }) {
      return { result: { name: await suggestAvailableSlug(tx) }, app: null };
    },
  }),

  [listApps.name]: handlerFor(listApps, {
    async run({ deps, wallet, tx }) {
      const rows = await tx
        .select()
        .from(sites)
        .where(ownedBy(walletOwner(wallet)))
        .orderBy(desc(sites.createdAt), asc(sites.id));
      const apps = [];
      for (const row of rows) {
        const v = await viewSite(deps, row, tx);
        apps.push({
          appId: v.id,
          appName: v.slug,
          visibility: v.visibility,
          hasPassword: v.hasPassword,
          published: v.published,
          status: v.status,
          pathUrl: v.pathUrl,
          url: v.url,
          entryPoint: v.entryPoint,
          fileCount: v.fileCount,
          bytes: v.bytes,
          createdAt: v.createdAt,
          updatedAt: v.updatedAt,
          suspension: v.suspension,
        });
      }
      return { result: { apps }, app: null };
    },
  }),

  [createAppFromHtml.name]: handlerFor(createAppFromHtml, {
    async check({ deps, input }) {
      const slug = SlugSchema.safeParse(input.name);
      if (!slug.success) {
        throw new AppError('validation_failed', `invalid name: ${slug.error.issues[0]?.message}`, {
          issues: [{ field: 'name', message: slug.error.issues[0]?.message }],
        });
      }
      if (input.visibility === 'public' && input.password) {
        throw new AppError('validation_failed', 'a password makes the app private: drop visibility "public" or the password', {
          issues: [{ field: 'visibility', message: 'public with a password' }],
        });
      }
      if (await isSlugTaken(deps.db, slug.data)) {
        const suggestion = await suggestAvailableSlug(deps.db, slug.data);
        throw new AppError('slug_taken', `the app name "${slug.data}" is taken; try "${suggestion}"`, { slug: slug.data, suggestion });
      }
    },
    async run({ deps, wallet, input, tx }) {
      const row = await createSite(
        deps,
        walletOwner(wallet),
        { slug: input.name, html: input.html, password: input.password, visibility: input.visibility, status: 'created', by: { kind: 'wallet', wallet } },
        tx,
      );
      return { result: appResult(deps, row, 'created'), app: touched(row) };
    },
  }),

  [updateAppFile.name]: handlerFor(updateAppFile, {
    async check({ deps, wallet, params, input }) {
      sitePath('path', input.path);
      if (input.contentType !== undefined && !isValidContentType(input.contentType)) {
        throw new AppError('validation_failed', `invalid contentType: ${input.contentType}`, {
          issues: [{ field: 'contentType', message: 'not a media type' }],
        });
      }
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      await assertCanWriteFile(deps, site, sitePath('path', input.path), Buffer.byteLength(input.content, 'utf8'));
    },
    async run({ deps, wallet, params, input, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await writeSiteFile(
        deps,
        site,
        { path: sitePath('path', input.path), bytes: Buffer.from(input.content, 'utf8'), contentType: input.contentType },
        { kind: 'wallet', wallet },
        tx,
      );
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),

  [updateAppMeta.name]: handlerFor(updateAppMeta, {
    async check({ deps, wallet, params, input }) {
      assertAccessChange(input);
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, input, tx }) {
      const row = await changeSiteAccess(deps, await getWalletApp(tx, wallet, params.siteId), input, tx);
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),

  [publishApp.name]: handlerFor(publishApp, {
    async check({ deps, wallet, params }) {
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await updateSite(deps, site, { published: true, status: 'published' }, tx);
      return { result: appResult(deps, row, 'published'), app: touched(row) };
    },
  }),

  [unpublishApp.name]: handlerFor(unpublishApp, {
    async check({ deps, wallet, params }) {
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await updateSite(deps, site, { published: false, status: 'updated' }, tx);
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),

  [deleteApp.name]: handlerFor(deleteApp, {
    async check({ deps, wallet, params }) {
      await getWalletApp(deps.db, wallet, params.siteId);
    },
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      // Tables, datasets and file rows hang off the site with ON DELETE CASCADE; blobs go after commit.
      await deleteSite(deps, site, tx);
      return { result: appResult(deps, site, 'deleted'), app: touched(site), afterCommit: () => deleteSiteBlobs(deps, site.id) };
    },
  }),

  [createSiteUploadUrls.name]: handlerFor(createSiteUploadUrls, {
    async check({ deps, wallet, params, input }) {
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      await checkUploadRequest(deps, site, input.files);
    },
    async run({ deps, wallet, params, input, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      return { result: await issueUploadUrls(deps, site, input.files), app: touched(site) };
    },
  }),

  [finalizeSiteUpload.name]: handlerFor(finalizeSiteUpload, {
    async check({ deps, wallet, params, input }) {
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      const claims = readUploadToken(deps, input.uploadToken, site);
      return { site, claims, files: await checkArrivedFiles(deps, claims, input) };
    },
    async run({ deps, wallet, params, input, tx, state }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const row = await addUploadedFiles(deps, site, state.files, input.entryPoint, { kind: 'wallet', wallet }, tx);
      return { result: appResult(deps, row, 'updated'), app: touched(row) };
    },
  }),
  [listAppVersions.name]: handlerFor(listAppVersions, {
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const { siteId, current, versions, total } = await listVersions(deps, site, { limit: 50, offset: 0 }, tx);
      return { result: { siteId, current, versions, total }, app: null };
    },
  }),

  [rollbackApp.name]: handlerFor(rollbackApp, {
    async check({ deps, wallet, params, input }) {
      // Before the payment: the app is the wallet's and the version is kept (or the requestId was answered).
      const site = await getWalletApp(deps.db, wallet, params.siteId);
      await assertCanRollBack(deps, site, input);
    },
    async run({ deps, wallet, params, input, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const done = await rollbackSite(deps, site, input, { kind: 'wallet', wallet }, tx);
      return { result: { siteId: site.id, version: done.version, replayed: done.replayed }, app: touched(done.site) };
    },
  }),

  [getAppTraffic.name]: handlerFor(getAppTraffic, {
    async run({ deps, wallet, params, tx }) {
      const site = await getWalletApp(tx, wallet, params.siteId);
      const { ok: _ok, ...traffic } = await readSiteTraffic(deps, site.id, 30, tx);
      return { result: traffic, app: null };
    },
  }),
};
