import type { Harness } from '../helpers/harness.js';

export interface TableFixture {
  siteId: string;
  siteSlug: string;
  key: string;
  accountId: string;
  table: { id: string; slug: string; url: string; pathUrl: string; writeKey: string };
  /** Table API path on the service host: /api/data/<site>/<table> */
  path: string;
}

let n = 0;

/** An account, a site and a table created through the Account API, as a user would. */
export async function makeTable(h: Harness, body: Record<string, unknown>, scopes?: Parameters<Harness['account']>[0]): Promise<TableFixture> {
  const { key, accountId } = await h.account(scopes);
  const siteRes = await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: `t${++n}`, html: '<p>t</p>' } });
  if (siteRes.status !== 201) throw new Error(`site: ${siteRes.status} ${await siteRes.text()}`);
  const { site } = await siteRes.json();
  const res = await h.fetch(`/api/v1/sites/${site.id}/tables`, { method: 'POST', key, json: body });
  if (res.status !== 201) throw new Error(`table: ${res.status} ${await res.text()}`);
  const { table } = await res.json();
  return { siteId: site.id, siteSlug: site.slug, key, accountId, table, path: new URL(table.pathUrl).pathname };
}

export async function getJson(h: Harness, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await h.fetch(path, { headers });
  return { status: res.status, body: await res.json() };
}
