import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrivateKeyAccount } from 'viem/accounts';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, fundedWallet, html, jsonInit, payV1, payV2 } from '../payments/helpers.js';

/** The two table actions paid for real on the dev chain, through both x402 client generations. */
describe.each(dbKinds())('Table actions on the paid Agent API (%s)', (kind) => {
  let h: Harness;
  let wallet: PrivateKeyAccount;
  let pay: typeof fetch;
  let appId: string;
  beforeAll(async () => {
    h = await startHarness(kind);
    wallet = await fundedWallet(h, 5_000_000n);
    pay = payV2(wallet);
    const app = await pay(`${h.url}/api/x402/apps`, jsonInit('POST', { name: `tables-${kind}`, html: html('T') }));
    appId = (await app.json()).app.appId;
  });
  afterAll(async () => h?.close());

  const call = async (p: typeof fetch, method: string, path: string, body?: unknown) => {
    const res = await p(`${h.url}${path}`, jsonInit(method, body));
    return { status: res.status, body: await res.json() };
  };

  it('create_table_api costs 0.008 and returns a working Table API; insert_table_records costs 0.001 per call', async () => {
    const chain = devChain(h);
    const before = await chain.balanceOf(wallet.address);
    const created = await call(pay, 'POST', `/api/x402/apps/${appId}/tables`, {
      name: 'Leaderboard',
      requireReadKey: true,
      schema: {
        fields: [
          { name: 'player', label: 'Player', type: 'string', required: true },
          { name: 'score', label: 'Score', type: 'integer' },
        ],
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.receipt).toMatchObject({ action: 'x402.create_table_api', price: '0.008', appId });
    const table = created.body.table;
    expect(table).toMatchObject({ slug: 'leaderboard', requireReadKey: true, writeKey: expect.stringMatching(/^svc_tk_/) });
    expect(await chain.balanceOf(wallet.address)).toBe(before - 8000n);

    const inserted = await call(payV1(wallet), 'POST', `/api/x402/tables/${table.id}/records`, {
      records: [
        { player: 'ann', score: 7 },
        { player: 'bob', score: 9 },
      ],
    });
    expect(inserted.status).toBe(200);
    expect(inserted.body).toMatchObject({ inserted: 2, receipt: { action: 'x402.insert_table_records', price: '0.001' } });
    expect(await chain.balanceOf(wallet.address)).toBe(before - 9000n);

    // A second client sees the records with the key, and nothing without it (requireReadKey).
    expect((await fetch(table.pathUrl)).status).toBe(401);
    const read = await fetch(`${table.pathUrl}?sortField=score&sortDir=desc`, { headers: { 'x-svc-write-key': table.writeKey } });
    expect((await read.json()).records.map((r: { fields: { player: string } }) => r.fields.player)).toEqual(['bob', 'ann']);
  });

  it('refusals cost nothing: a bad record (400 naming it), another wallet (404), too many records (400)', async () => {
    const chain = devChain(h);
    const created = await call(pay, 'POST', `/api/x402/apps/${appId}/tables`, {
      name: 'Strict',
      schema: { fields: [{ name: 'n', label: 'N', type: 'integer' }] },
    });
    const tableId = created.body.table.id;
    const before = await chain.balanceOf(wallet.address);
    const bad = await call(pay, 'POST', `/api/x402/tables/${tableId}/records`, { records: [{ n: 1 }, { n: 'two' }] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.error)).toContain('records.1.n');
    const tooMany = await call(pay, 'POST', `/api/x402/tables/${tableId}/records`, { records: Array.from({ length: 501 }, () => ({ n: 1 })) });
    expect(tooMany.status).toBe(400);
    expect(await chain.balanceOf(wallet.address)).toBe(before);

    const stranger = await fundedWallet(h, 1_000_000n);
    const theirs = await call(payV2(stranger), 'POST', `/api/x402/tables/${tableId}/records`, { records: [{ n: 1 }] });
    expect(theirs.status).toBe(404);
    const theirsCreate = await call(payV2(stranger), 'POST', `/api/x402/apps/${appId}/tables`, {
      name: 'x',
      schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] },
    });
    expect(theirsCreate.status).toBe(404);
    expect(await chain.balanceOf(stranger.address)).toBe(1_000_000n);
    const count = await (await fetch(`${created.body.table.pathUrl}?aggregate=count`)).json();
    expect(count.value).toBe(0);
  });
});
