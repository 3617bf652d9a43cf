import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rowsOf, type Database } from '../../service/db/client.js';
import { DevChainFacilitator } from '../../service/payments/dev-chain/dev-facilitator.js';
import { DEV_RECIPIENT, DEV_SETTLER_KEY } from '../../service/payments/x402-config.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import type { ServiceNode } from '../helpers/nodes.js';
import { html, jsonInit, payV1, signAuthorization, xPaymentHeader } from '../payments/helpers.js';
import { sql } from 'drizzle-orm';

// Three real service processes on one PostgreSQL database, one S3-compatible store (s3rver) and one
// chain (a dev chain this test owns; every node settles through it with the same settler key). The
// main flows run across them. PostgreSQL only: PGlite is one process's own database.
const PRICE = 7000n;
const SITE_LIMIT = 4;
const RATE_LIMIT = 20;
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('three nodes, one PostgreSQL, one bucket, one chain', { timeout: 240_000 }, () => {
  let cluster: Cluster;
  let nodes: ServiceNode[];
  let chain: DevChainFacilitator;
  let direct: Database;

  beforeAll(async () => {
    chain = new DevChainFacilitator();
    await chain.start();
    cleanups.push(() => chain.close());
    cluster = await startCluster(3, {
      SVC_X402_MODE: 'chain',
      SVC_X402_RPC_URL: chain.rpcUrl,
      SVC_X402_SETTLER_KEY: DEV_SETTLER_KEY,
      SVC_X402_RECIPIENT: DEV_RECIPIENT,
      SVC_MAX_SITES_PER_ACCOUNT: String(SITE_LIMIT),
      SVC_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
      SVC_TRAFFIC_FLUSH_MS: '200',
    });
    cleanups.push(cluster.close);
    nodes = cluster.nodes;
    direct = cluster.direct;
  });

  async function wallet(atomic = 1_000_000n): Promise<PrivateKeyAccount> {
    const account = privateKeyToAccount(generatePrivateKey());
    await chain.mint(account.address, atomic);
    return account;
  }

  const accountKey = () => cluster.accountKey();

  /**
   * What the other nodes serve right after a change: each drops its cached copy when the change's
   * NOTIFY reaches it (milliseconds; on a loaded machine a request may come first), so the check is
   * asked again, bounded far below the 30 s cache TTL: it still fails when no notification comes.
   */
  const soon = (check: () => Promise<void>) => vi.waitFor(check, { timeout: 5000, interval: 20 });

  /** The same path on another node. */
  const on = (node: ServiceNode, url: string) => `${node.url}${new URL(url).pathname}${new URL(url).search}`;

  /** A site published through `node` with one Table (`tableBody`: the Account API's create body). */
  async function siteWithTable(node: ServiceNode, auth: Record<string, string>, requestId: string, tableBody: unknown) {
    const published = await fetch(`${node.url}/api/v1/sites`, jsonInit('POST', { requestId, html: '<h1>up</h1>' }, auth));
    const { site } = await published.json();
    const made = await fetch(`${node.url}/api/v1/sites/${site.id}/tables`, jsonInit('POST', tableBody, auth));
    const { table } = await made.json();
    return { site, table };
  }

  /** An operator operation through `node`'s admin endpoint; resolves to the status. */
  const adminOf =
    (node: ServiceNode) =>
    (operation: string, input: unknown): Promise<number> =>
      cluster.admin(node, operation, input).then((r) => r.status);

  async function sitesOfWallet(address: string): Promise<number> {
    const rows = rowsOf<{ n: string }>(await direct.db.execute(sql`select count(*) as n from sites where owner_wallet = ${address.toLowerCase()}`));
    return Number(rows[0]!.n);
  }

  it('a change made through one node is served by the others at once (LISTEN/NOTIFY, not the 30 s cache TTL)', async () => {
    const [n1, n2, n3] = nodes;
    const payer = await wallet();
    const pay = payV1(payer);
    const name = `cross-${Date.now()}`;
    // Visited before it exists: node 2 and node 3 cache "no such site" for the slug.
    for (const n of [n2, n3]) expect((await fetch(`${n!.url}/s/${name}/`)).status).toBe(404);
    const created = await pay(`${n1!.url}/api/x402/apps`, jsonInit('POST', { name, html: html('first') }));
    expect(created.status).toBe(201);
    const { app } = await created.json();
    expect(new URL(app.pathUrl).pathname).toBe(`/s/${name}/`);
    // Node 2 and node 3 serve it at once, and now it is in their caches (30 s TTL by default).
    for (const n of [n2, n3]) await soon(async () => expect(await (await fetch(on(n!, app.pathUrl))).text()).toContain('<h1>first</h1>'));

    const updated = await pay(`${n3!.url}/api/x402/apps/${app.appId}/files`, jsonInit('POST', { path: 'index.html', content: html('second') }));
    expect(updated.status).toBe(200);
    for (const n of [n2, n1]) await soon(async () => expect(await (await fetch(on(n!, app.pathUrl))).text()).toContain('<h1>second</h1>'));

    const hidden = await pay(`${n1!.url}/api/x402/apps/${app.appId}`, jsonInit('PATCH', { visibility: 'private' }));
    expect(hidden.status).toBe(200);
    for (const n of [n2, n3]) await soon(async () => expect((await fetch(on(n!, app.pathUrl))).status).not.toBe(200));
  });

  it('a rollback through one node is served by the others at once; traffic served by every node is counted once', async () => {
    const [n1, n2, n3] = nodes;
    const auth = { authorization: `Bearer ${await accountKey()}` };
    const slug = `undo-${Date.now()}`;
    const made = await fetch(`${n1!.url}/api/v1/sites`, jsonInit('POST', { requestId: slug, slug, html: html('v1') }, auth));
    expect(made.status).toBe(201);
    const { site } = await made.json();
    const changed = await fetch(`${n2!.url}/api/v1/sites/${site.id}/files`, jsonInit('POST', { files: [{ path: 'index.html', content: html('v2') }] }, auth));
    expect(changed.status).toBe(200);
    // Every node serves (and caches) version 2.
    for (const n of nodes) expect(await (await fetch(on(n, site.pathUrl))).text()).toContain('<h1>v2</h1>');
    const back = await fetch(`${n3!.url}/api/v1/sites/${site.id}/rollback`, jsonInit('POST', { version: 1, requestId: 'back' }, auth));
    expect(back.status).toBe(201);
    // The other nodes drop their cached version 2 when the rollback's NOTIFY reaches them (milliseconds;
    // on a loaded machine a request may come first, so wait for it, bounded: not the 30 s cache TTL).
    let servedAfter = 0;
    for (const n of [n1, n2])
      await vi.waitFor(
        async () => {
          servedAfter++;
          expect(await (await fetch(on(n!, site.pathUrl))).text()).toContain('<h1>v1</h1>');
        },
        { timeout: 5_000, interval: 50 },
      );
    // The preview of version 2 is served by any node too.
    expect(await (await fetch(on(n1!, `${site.pathUrl}__svc/v/2/`))).text()).toContain('<h1>v2</h1>');
    // 3 + 2 + 1 requests of the site and 1 preview went to three nodes; each adds its own counts
    // when it flushes (SVC_TRAFFIC_FLUSH_MS: 200 here): the sum is exact, whatever node answers.
    // Read from the database (the Account API's per-key limit is 20 a minute here).
    const counted = async () =>
      rowsOf<{ requests: string | null; previews: string | null }>(
        await direct.db.execute(sql`select sum(requests) as requests, sum(preview_requests) as previews from site_traffic where site_id = ${site.id}`),
      )[0]!;
    await vi.waitFor(async () => expect(Number((await counted()).requests) + Number((await counted()).previews)).toBeGreaterThanOrEqual(3 + servedAfter + 1), {
      timeout: 10_000,
      interval: 100,
    });
    const total = { requests: Number((await counted()).requests), previewRequests: Number((await counted()).previews) };
    expect(total.previewRequests).toBe(1);
    // 3 before the rollback and every answer of nodes 1 and 2 after it, each counted once.
    expect(total.requests).toBe(3 + servedAfter);
  });

  it('the same payment sent to two nodes at once does the work once and charges once', async () => {
    const [n1, n2] = nodes;
    const payer = await wallet();
    const recipientBefore = await chain.balanceOf(DEV_RECIPIENT);
    const header = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE }));
    const body = { name: `twice-${Date.now()}`, html: html('twice') };
    const answers = await Promise.all([n1, n2, n1, n2].map((n) => fetch(`${n!.url}/api/x402/apps`, jsonInit('POST', body, header))));
    const bodies = await Promise.all(answers.map((r) => r.json()));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(new Set(bodies.map((b) => b.app.appId)).size).toBe(1);
    expect(await chain.balanceOf(payer.address)).toBe(1_000_000n - PRICE);
    expect(await chain.balanceOf(DEV_RECIPIENT)).toBe(recipientBefore + PRICE);
    expect(await sitesOfWallet(payer.address)).toBe(1);
  });

  it('one Idempotency-Key holds across nodes: a retry with a new payment on another node is answered, not done or charged again', async () => {
    const [n1, n2, n3] = nodes;
    const payer = await wallet();
    const key = `nodes-idem-${Date.now()}`;
    const body = { name: `idem-${Date.now()}`, html: html('idem') };
    const send = async (n: ServiceNode) =>
      fetch(
        `${n.url}/api/x402/apps`,
        jsonInit('POST', body, { ...xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: PRICE })), 'Idempotency-Key': key }),
      );
    const first = await send(n1!);
    expect(first.status).toBe(201);
    const again = await Promise.all([send(n2!), send(n3!)]);
    expect(again.map((r) => r.status)).toEqual([201, 201]);
    const firstApp = (await first.json()).app.appId;
    for (const r of again) expect((await r.json()).app.appId).toBe(firstApp);
    expect(await chain.balanceOf(payer.address)).toBe(1_000_000n - PRICE);
    expect(await sitesOfWallet(payer.address)).toBe(1);
  });

  it(`${SITE_LIMIT * 3} concurrent publishes split over three nodes for an account limited to ${SITE_LIMIT} sites make ${SITE_LIMIT} sites`, async () => {
    const key = await accountKey();
    const auth = { authorization: `Bearer ${key}` };
    const answers = await Promise.all(
      [...Array(SITE_LIMIT * 3).keys()].map((i) =>
        fetch(`${nodes[i % 3]!.url}/api/v1/sites`, jsonInit('POST', { requestId: `quota-${i}`, html: `<p>${i}</p>` }, auth)),
      ),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(SITE_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(SITE_LIMIT * 2);
    const list = await (await fetch(`${nodes[2]!.url}/api/v1/sites`, { headers: auth })).json();
    expect(list.total).toBe(SITE_LIMIT);
  });

  it(`the per-key rate limit (${RATE_LIMIT} a minute) counts requests on every node together`, async () => {
    const key = await accountKey();
    // A fixed one-minute window: start well inside one, so the burst is not split over two.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
    const answers = await Promise.all(
      [...Array(RATE_LIMIT + 10).keys()].map((i) => fetch(`${nodes[i % 3]!.url}/api/v1/sites`, { headers: { authorization: `Bearer ${key}` } })),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(RATE_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    const refused = answers.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a data file uploaded through node 1 converts on node 3 and is queried on node 2', async () => {
    const [n1, n2, n3] = nodes;
    const payer = await wallet();
    const pay = payV1(payer);
    const created = await pay(`${n1!.url}/api/x402/apps`, jsonInit('POST', { name: `data-${Date.now()}`, html: html('data') }));
    const { app } = await created.json();
    const csv = 'city,population\nLyon,522000\nNantes,320000\nLille,236000\n';
    const upload = await pay(
      `${n1!.url}/api/x402/apps/${app.appId}/data-files/upload-url`,
      jsonInit('POST', { fileName: 'cities.csv', fileSize: Buffer.byteLength(csv) }),
    );
    expect(upload.status).toBe(200);
    const { key, upload: put } = await upload.json();
    const stored = await fetch(put.url, { method: 'PUT', headers: put.headers, body: csv });
    expect(stored.status).toBe(200);
    const converted = await pay(`${n3!.url}/api/x402/apps/${app.appId}/data-files/convert`, jsonInit('POST', { key, fileName: 'cities.csv' }));
    expect(converted.status).toBe(200);
    const { asset } = await converted.json();
    expect(asset.recordCount).toBe(3);
    const query = await fetch(`${on(n2!, asset.pathUrl)}?sort=-population&limit=1`);
    expect(query.status).toBe(200);
    expect((await query.json()).records).toEqual([expect.objectContaining({ fields: { city: 'Lyon', population: 522000 } })]);
  });

  it('a personal key revoked through one node is refused at the next Table API read on every node that keeps it', async () => {
    const [n1] = nodes;
    const key = await accountKey();
    const auth = { authorization: `Bearer ${key}` };
    const { site, table } = await siteWithTable(n1!, auth, `keys-${Date.now()}`, {
      name: 'Secrets',
      requireReadKey: true,
      schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] },
    });
    const written = await fetch(on(n1!, table.pathUrl), jsonInit('POST', { record: { a: 'secret' } }, { 'x-svc-write-key': table.writeKey }));
    expect(written.status).toBe(201);
    // Each node reads with the key twice: the second read is one statement with the key it keeps.
    const read = (n: ServiceNode) => fetch(on(n, table.pathUrl), { headers: { 'x-svc-api-key': key } });
    for (const n of nodes) for (let i = 0; i < 2; i++) expect((await read(n)).status).toBe(200);

    const [owner] = rowsOf<{ email: string; key_id: string }>(
      await direct.db.execute(
        sql`select a.email, k.id as key_id from accounts a join personal_keys k on k.account_id = a.id join sites s on s.owner_account_id = a.id where s.id = ${site.id}`,
      ),
    );
    expect(await adminOf(n1!)('key.revoke', { email: owner!.email, keyId: owner!.key_id })).toBe(200);
    for (const n of nodes) {
      const refused = await read(n);
      expect(refused.status).toBe(401);
      const body = await refused.text();
      expect(body).toContain('the key is revoked');
      expect(body).not.toContain('secret');
    }
  });

  it('a takedown through one node holds on every node at once: the site, its Table API, the account (suspend and restore)', async () => {
    const [n1, n2, n3] = nodes;
    const key = await accountKey();
    const auth = { authorization: `Bearer ${key}` };
    const { site, table } = await siteWithTable(n1!, auth, `takedown-${Date.now()}`, {
      name: 'Notes',
      schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] },
    });
    // Every node serves and caches the site and the table first.
    for (const n of nodes) {
      expect((await fetch(on(n, site.pathUrl))).status).toBe(200);
      expect((await fetch(on(n, table.pathUrl))).status).toBe(200);
    }
    const admin = adminOf(n1!);

    expect(await admin('site.suspend', { site: site.id, reason: 'cross-node takedown' })).toBe(200);
    for (const n of [n2, n3]) {
      await soon(async () => expect((await fetch(on(n!, site.pathUrl))).status).toBe(451));
      await soon(async () => expect((await fetch(on(n!, table.pathUrl))).status).toBe(451));
    }
    expect(await admin('site.restore', { site: site.id, reason: 'cleared' })).toBe(200);
    for (const n of [n2, n3]) {
      await soon(async () => expect((await fetch(on(n!, site.pathUrl))).status).toBe(200));
      await soon(async () => expect((await fetch(on(n!, table.pathUrl))).status).toBe(200));
    }

    const owner = rowsOf<{ email: string }>(
      await direct.db.execute(sql`select a.email from accounts a join sites s on s.owner_account_id = a.id where s.id = ${site.id}`),
    );
    const email = owner[0]!.email;
    expect(await admin('account.suspend', { email, reason: 'cross-node account takedown' })).toBe(200);
    for (const n of [n2, n3]) {
      expect((await fetch(`${n!.url}/api/v1/sites`, { headers: auth })).status).toBe(403);
      await soon(async () => expect((await fetch(on(n!, site.pathUrl))).status).toBe(451));
      await soon(async () => expect((await fetch(on(n!, table.pathUrl))).status).toBe(451));
    }
    expect(await admin('account.restore', { email, reason: 'appeal granted' })).toBe(200);
    for (const n of [n2, n3]) {
      expect((await fetch(`${n!.url}/api/v1/sites`, { headers: auth })).status).toBe(200);
      await soon(async () => expect((await fetch(on(n!, site.pathUrl))).status).toBe(200));
    }
  });
});
