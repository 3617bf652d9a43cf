import { describe, expect, it } from 'vitest';
import { answerInToolWords } from '../../mcp/vocabulary.js';

// The service's answers in the tools' words: what a model reads in every result.
describe('answers in the tools’ vocabulary', () => {
  it('apps, Tables, Functions and datasets name their ids as the tools take them; other fields pass through', () => {
    expect(
      answerInToolWords({
        ok: true,
        site: { id: 'site_1', slug: 'shop', url: 'u' },
        tables: [{ id: 'tbl_1', siteId: 'site_1', slug: 'items' }],
        function: { id: 'fn_1', slug: 'hello' },
        asset: { id: 'ds_1', slug: 'cities', tableId: 'tbl_2', recordCount: 3 },
        siteId: 'site_1',
        receipt: { id: 'rcpt_1' },
      }),
    ).toEqual({
      ok: true,
      app: { appId: 'site_1', appName: 'shop', url: 'u' },
      tables: [{ tableId: 'tbl_1', appId: 'site_1', slug: 'items' }],
      function: { functionId: 'fn_1', slug: 'hello' },
      dataset: { datasetId: 'ds_1', slug: 'cities', tableId: 'tbl_2', recordCount: 3 },
      appId: 'site_1',
      receipt: { id: 'rcpt_1' },
    });
    expect(answerInToolWords({ datasets: [{ id: 'ds_1', tableId: 'tbl_2' }] })).toEqual({ datasets: [{ datasetId: 'ds_1', tableId: 'tbl_2' }] });
  });
});
