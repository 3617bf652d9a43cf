import { readAdminFile } from '../service/admin/admin-file.js';
import { SCOPES } from '../shared/scopes.js';
import type { ServiceNode } from '../test/helpers/nodes.js';
import { html, jsonInit } from '../test/payments/helpers.js';
import type { ScenarioResult } from './report.js';

export const REQUEST_TIMEOUT_MS = 10_000;

/** What the service acknowledged (2xx) during the streams: each must still be there after every restart. */
export interface Acked {
  publishes: { id: string; pathUrl: string }[];
  records: { path: string }[];
  apps: { appId: string; pathUrl: string }[];
}

/** A table that takes inserts: its Table API path and write key. */
export interface TableTarget {
  pathUrl: string;
  writeKey: string;
}

/** SIGKILL, and waits for the process to be gone (its data folder stays). */
export async function kill(node: ServiceNode): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((r) => node.child.once('exit', r));
  node.child.kill('SIGKILL');
  await exited;
}

/** An account with a personal key and a site holding a table that takes inserts with its write key. */
export async function accountWithTable(node: ServiceNode): Promise<{ key: string; table: TableTarget }> {
  const email = `chaos-${Date.now()}@example.com`;
  const key = await createAccountKey(node.dataDir, email);
  const auth = { authorization: `Bearer ${key}` };
  const site = await (await fetch(`${node.url}/api/v1/sites`, jsonInit('POST', { requestId: 'chaos-table-site', html: html('tables') }, auth))).json();
  const created = await fetch(
    `${node.url}/api/v1/sites/${site.site.id}/tables`,
    jsonInit('POST', { name: 'events', methods: ['GET', 'POST'], schema: { fields: [{ name: 'n', label: 'N', type: 'number' }] } }, auth),
  );
  if (created.status !== 201) throw new Error(`table create: ${created.status} ${await created.text()}`);
  const { table } = await created.json();
  return { key, table: { pathUrl: new URL(table.pathUrl).pathname, writeKey: table.writeKey } };
}

/** An account and a personal key, as the CLI's `account create` and `key create` make them (the running node's admin endpoint). */
async function createAccountKey(dataDir: string, email: string): Promise<string> {
  const admin = readAdminFile(dataDir);
  if (!admin) throw new Error(`no admin file in ${dataDir}`);
  const call = async (name: string, input: unknown) => {
    const res = await fetch(`${admin.url}/_admin/${name}`, jsonInit('POST', input, { 'x-svc-admin-token': admin.token }));
    const body = (await res.json()) as { ok: boolean; result: Record<string, unknown> };
    if (!body.ok) throw new Error(`${name}: ${JSON.stringify(body)}`);
    return body.result;
  };
  await call('account.create', { email });
  const created = await call('key.create', { email, name: 'chaos', scopes: [...SCOPES] });
  return created.secret as string;
}

/** Every acknowledged write is there (else `lost`), and every site the account lists serves its page (else `partialWrites`). */
export async function checkAcked(node: ServiceNode, key: string, acked: Acked, result: ScenarioResult): Promise<void> {
  const missing = (what: string) => {
    result.lost++;
    if (result.notes.length < 8) result.notes.push(`acknowledged ${what} missing after restart`);
  };
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${node.url}${path}`, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  for (const p of acked.publishes) if ((await get(p.pathUrl)).status !== 200) missing(`publish ${p.id}`);
  for (const a of acked.apps) if ((await get(a.pathUrl)).status !== 200) missing(`paid app ${a.appId}`);
  for (const r of acked.records) if ((await get(r.path)).status !== 200) missing(`record ${r.path}`);
  result.tried += acked.publishes.length + acked.apps.length + acked.records.length;
  // Nothing half-written: every site the account has (acknowledged or not) serves its page.
  const listed: { id: string; pathUrl: string }[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = (await (await get(`/api/v1/sites?limit=200&offset=${offset}`, { authorization: `Bearer ${key}` })).json()) as {
      sites: { id: string; pathUrl: string }[];
      total: number;
    };
    listed.push(...page.sites);
    if (page.sites.length === 0 || listed.length >= page.total) break;
  }
  for (const site of listed) {
    result.tried++;
    const res = await get(new URL(site.pathUrl).pathname);
    if (res.status !== 200) {
      result.partialWrites++;
      if (result.notes.length < 8) result.notes.push(`site ${site.id} listed but its page answers ${res.status}`);
    }
  }
}
