import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTableApi, insertTableRecords } from '../../shared/agent-api/actions/tables.js';
import type { AgentHandler } from '../../service/agent/handler.js';
import { AppError } from '../../service/kernel/app-error.js';
import { walletOwner } from '../../service/db/owner.js';
import { createSite } from '../../service/sites/sites.js';
import { tableAgentHandlers } from '../../service/tables/agent-handlers.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

/**
 * The two paid table actions through the handler contract (service/agent/handler.ts): zod-parse the
 * input with the catalogue schema, `check` (free), then `run` inside a transaction, as the paid
 * route does. Payment itself is the payments machinery's to test.
 */
const WALLET = '0x1111111111111111111111111111111111111111';
const OTHER = '0x2222222222222222222222222222222222222222';

async function paidCall(
  h: Harness,
  action: { name: string; input: { parse(x: unknown): unknown } },
  wallet: string,
  params: Record<string, string>,
  body: unknown,
) {
  const handler = tableAgentHandlers[action.name] as AgentHandler<Record<string, string>, unknown, any, unknown>;
  const input = action.input.parse(body);
  const call = { deps: h.deps, wallet, params, input };
  const state = await handler.check!(call);
  return h.deps.db.transaction((tx) => handler.run({ ...call, tx, state }));
}

async function failure(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('expected an AppError');
}

describe.each(dbKinds())('Table agent actions through the handler contract (%s)', (kind) => {
  let h: Harness;
  let siteId: string;
  let siteSlug: string;
  beforeAll(async () => {
    h = await startHarness(kind);
    const site = await createSite(h.deps, walletOwner(WALLET), { html: '<p>app</p>', status: 'created' });
    siteId = site.id;
    siteSlug = site.slug;
  });
  afterAll(async () => h?.close());

  it('create_table_api makes a table whose url and write key work; insert_table_records fills it', async () => {
    const work = await paidCall(
      h,
      createTableApi,
      WALLET,
      { siteId },
      {
        name: 'Scores',
        schema: {
          fields: [
            { name: 'player', label: 'Player', type: 'string', required: true },
            { name: 'score', label: 'Score', type: 'integer' },
          ],
        },
      },
    );
    expect(work.app).toEqual({ id: siteId, slug: siteSlug, visibility: 'public' });
    const table = work.result.table;
    expect(createTableApi.output.parse({ ok: true, ...work.result })).toBeTruthy();
    expect(table).toMatchObject({ slug: 'scores', requireReadKey: false, writeKey: expect.stringMatching(/^svc_tk_/) });

    const inserted = await paidCall(
      h,
      insertTableRecords,
      WALLET,
      { tableId: table.id },
      {
        records: [
          { player: 'ann', score: 3 },
          { player: 'bob', score: '5' },
        ],
      },
    );
    expect(inserted.result).toEqual({ inserted: 2, ids: [expect.any(String), expect.any(String)] });
    expect(insertTableRecords.output.parse({ ok: true, ...inserted.result })).toBeTruthy();

    const list = await (await h.fetch(`${new URL(table.pathUrl).pathname}?sortField=score&sortDir=desc`)).json();
    expect(list.records.map((r: { fields: unknown }) => r.fields)).toEqual([
      { player: 'bob', score: 5 },
      { player: 'ann', score: 3 },
    ]);
    const write = await h.fetch(new URL(table.pathUrl).pathname, {
      method: 'POST',
      json: { record: { player: 'cy' } },
      headers: { 'x-svc-write-key': table.writeKey },
    });
    expect(write.status).toBe(201);
  });

  it('check refuses before any work: another wallet 404, bad schema 400, bad record 400 naming it, dataset 405', async () => {
    const other = await failure(paidCall(h, createTableApi, OTHER, { siteId }, { name: 'x', schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] } }));
    expect(other.status).toBe(404);
    const badSchema = await failure(
      paidCall(h, createTableApi, WALLET, { siteId }, { name: 'x', schema: { fields: [{ name: 'a b', label: 'A', type: 'string' }] } }).catch((e) => {
        throw e instanceof Error && e.name === 'ZodError' ? new AppError('validation_failed', e.message) : e;
      }),
    );
    expect(badSchema.status).toBe(400);

    const { result } = await paidCall(
      h,
      createTableApi,
      WALLET,
      { siteId },
      { name: 'Strict', schema: { fields: [{ name: 'n', label: 'N', type: 'integer' }] } },
    );
    const tableId = result.table.id;
    const bad = await failure(paidCall(h, insertTableRecords, WALLET, { tableId }, { records: [{ n: 1 }, { n: 'x' }] }));
    expect(bad.status).toBe(400);
    expect((bad.details as { issues: { field: string }[] }).issues[0]!.field).toBe('records.1.n');
    const notMine = await failure(paidCall(h, insertTableRecords, OTHER, { tableId }, { records: [{ n: 1 }] }));
    expect(notMine.status).toBe(404);
    const missing = await failure(paidCall(h, insertTableRecords, WALLET, { tableId: 'tbl_nope' }, { records: [{ n: 1 }] }));
    expect(missing.status).toBe(404);
    const count = await (await h.fetch(`/api/data/${siteSlug}/strict?aggregate=count`)).json();
    expect(count.value).toBe(0);
    expect(() => insertTableRecords.input.parse({ records: Array.from({ length: 501 }, () => ({ n: 1 })) })).toThrow();
  });

  it('a rolled-back paid transaction (failed settlement) leaves no table behind', async () => {
    const handler = tableAgentHandlers[createTableApi.name] as AgentHandler<Record<string, string>, unknown, any, unknown>;
    const call = {
      deps: h.deps,
      wallet: WALLET,
      params: { siteId },
      input: createTableApi.input.parse({ name: 'Ghost', slug: 'ghost', schema: { fields: [{ name: 'a', label: 'A', type: 'string' }] } }),
    };
    const state = await handler.check!(call);
    await expect(
      h.deps.db.transaction(async (tx) => {
        await handler.run({ ...call, tx, state });
        throw new Error('settlement failed');
      }),
    ).rejects.toThrow('settlement failed');
    expect((await h.fetch(`/api/data/${siteSlug}/ghost`)).status).toBe(404);
  });
});
