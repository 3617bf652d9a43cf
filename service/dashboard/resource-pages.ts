import type { Hono } from 'hono';
import { AppError } from '../kernel/app-error.js';
import { toAppError } from '../http/handle-error.js';
import { accountOwner } from '../db/owner.js';
import { getOwnedSite, listOwnedSites, viewSite } from '../sites/sites.js';
import { readSiteTraffic } from '../sites/traffic.js';
import { listVersions, rollbackSite } from '../sites/versions.js';
import { formText as text, type PageKit, renderPage } from './page-kit.js';
import * as pages from './pages.js';
import type { DashboardSession } from './session.js';

/** The account's sites (with their tables' write keys) and functions (user access, secrets). */
export function resourcePages(app: Hono, kit: PageKit): void {
  sitePages(app, kit);
  functionPages(app, kit);
}

/** Sites and their tables; a table's write key is regenerated here. */
function sitePages(app: Hono, { deps, resources, signedIn, done }: PageKit): void {
  async function sitesView(s: DashboardSession) {
    const { sites: list, total } = await listOwnedSites(deps, accountOwner(s.accountId), { limit: 200, offset: 0 });
    const withTables = await Promise.all(
      list.map(async (site) => ({
        site,
        tables: resources.listTables ? await resources.listTables(deps, await getOwnedSite(deps.db, accountOwner(s.accountId), site.id)) : null,
      })),
    );
    return { sites: withTables, total, tablesAvailable: resources.listTables !== null };
  }

  app.get(
    '/dashboard/sites',
    signedIn(async (c, s, chrome) => renderPage(c, pages.sitesPage(chrome, { ...(await sitesView(s)), ok: done(c) }))),
  );

  async function siteView(s: DashboardSession, siteId: string) {
    const site = await getOwnedSite(deps.db, accountOwner(s.accountId), siteId);
    return {
      site: await viewSite(deps, site),
      versions: await listVersions(deps, site, { limit: 50, offset: 0 }),
      traffic: await readSiteTraffic(deps, site.id, 30),
    };
  }

  app.get(
    '/dashboard/sites/:siteId',
    signedIn(async (c, s, chrome) => renderPage(c, pages.sitePage(chrome, { ...(await siteView(s, c.req.param('siteId')!)), ok: done(c) }))),
  );

  app.post(
    '/dashboard/sites/:siteId/rollback',
    signedIn(async (c, s, chrome, form) => {
      const siteId = c.req.param('siteId')!;
      try {
        const site = await getOwnedSite(deps.db, accountOwner(s.accountId), siteId);
        const version = Number(text(form.version));
        if (!Number.isInteger(version) || version < 1) throw new AppError('validation_failed', 'no version chosen');
        // The form's requestId: a form sent twice (a reload) rolls back once.
        const requestId = text(form.requestId) || undefined;
        await rollbackSite(
          deps,
          site,
          { version, requestId },
          { kind: 'account', accountId: s.accountId, credential: { kind: 'dashboard_session', id: 'dashboard' } },
        );
        return c.redirect(`/dashboard/sites/${encodeURIComponent(site.id)}?done=rolled_back`, 303);
      } catch (e) {
        const err = toAppError(e, deps.log);
        if (err.code === 'not_found' && !(await isOwnSite(s, siteId))) return renderPage(c, pages.errorPage('Not found', err.message, chrome), 404);
        return renderPage(c, pages.sitePage(chrome, { ...(await siteView(s, siteId)), error: err.message }), err.status);
      }
    }),
  );

  async function isOwnSite(s: DashboardSession, siteId: string): Promise<boolean> {
    return getOwnedSite(deps.db, accountOwner(s.accountId), siteId).then(
      () => true,
      () => false,
    );
  }

  app.post(
    '/dashboard/sites/:siteId/tables/:tableId/write-key',
    signedIn(async (c, s, chrome) => {
      try {
        if (!resources.regenerateWriteKey) throw new AppError('not_found', 'regenerating write keys is not available on this server yet');
        const writeKey = await resources.regenerateWriteKey(deps, s.accountId, c.req.param('siteId')!, c.req.param('tableId')!);
        return renderPage(c, pages.sitesPage(chrome, { ...(await sitesView(s)), writeKey }));
      } catch (e) {
        const err = toAppError(e, deps.log);
        return renderPage(c, pages.sitesPage(chrome, { ...(await sitesView(s)), error: err.message }), err.status);
      }
    }),
  );
}

/** Functions: user access on or off, secrets set and deleted (names only are ever shown). */
function functionPages(app: Hono, { deps, resources, signedIn, done }: PageKit): void {
  async function functionsView(s: DashboardSession) {
    return resources.listFunctions ? await resources.listFunctions(deps, s.accountId) : null;
  }

  app.get(
    '/dashboard/functions',
    signedIn(async (c, s, chrome) => renderPage(c, pages.functionsPage(chrome, { functions: await functionsView(s), ok: done(c) }))),
  );

  function functionAction(run: (s: DashboardSession, functionId: string, form: Record<string, string | string[]>) => Promise<string>) {
    return signedIn(async (c, s, chrome, form) => {
      try {
        const doneCode = await run(s, c.req.param('functionId')!, form);
        return c.redirect(`/dashboard/functions?done=${doneCode}`, 303);
      } catch (e) {
        const err = toAppError(e, deps.log);
        return renderPage(c, pages.functionsPage(chrome, { functions: await functionsView(s), error: err.message }), err.status);
      }
    });
  }
  const unavailable = () => new AppError('not_found', 'this is not available on this server yet');

  app.post(
    '/dashboard/functions/:functionId/user-access',
    functionAction(async (s, id, form) => {
      if (!resources.setUserAccess) throw unavailable();
      const enabled = text(form.enabled) === 'true';
      await resources.setUserAccess(deps, s.accountId, id, enabled);
      return enabled ? 'access_on' : 'access_off';
    }),
  );
  app.post(
    '/dashboard/functions/:functionId/secrets',
    functionAction(async (s, id, form) => {
      if (!resources.setSecret) throw unavailable();
      await resources.setSecret(deps, s.accountId, id, text(form.name).trim(), text(form.value));
      return 'secret_set';
    }),
  );
  app.post(
    '/dashboard/functions/:functionId/secrets/delete',
    functionAction(async (s, id, form) => {
      if (!resources.deleteSecret) throw unavailable();
      await resources.deleteSecret(deps, s.accountId, id, text(form.name).trim());
      return 'secret_deleted';
    }),
  );
}
