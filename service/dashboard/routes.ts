import { Hono } from 'hono';
import type { Deps } from '../deps.js';
import { accountPages } from './account-pages.js';
import { dashboardResources, type DashboardResources } from './integrations.js';
import { STYLE_CSS } from './layout.js';
import { dashboardSecurityHeaders, pageKit } from './page-kit.js';
import { resourcePages } from './resource-pages.js';
import { signInRoutes } from './sign-in.js';

/** The dashboard: its stylesheet and security headers, then its page groups. */
export function dashboardRoutes(deps: Deps, resources: DashboardResources = dashboardResources): Hono {
  const app = new Hono();

  app.get('/dashboard/assets/style.css', (c) => {
    c.header('content-type', 'text/css; charset=utf-8');
    c.header('cache-control', 'public, max-age=3600');
    return c.body(STYLE_CSS);
  });

  app.get('/dashboard/', (c) => c.redirect('/dashboard', 301));

  app.use('/dashboard', async (c, next) => {
    await next();
    dashboardSecurityHeaders(c);
  });
  app.use('/dashboard/*', async (c, next) => {
    await next();
    if (!c.req.path.startsWith('/dashboard/assets/')) dashboardSecurityHeaders(c);
  });

  signInRoutes(app, deps);
  const kit = pageKit(deps, resources);
  accountPages(app, kit);
  resourcePages(app, kit);
  return app;
}
