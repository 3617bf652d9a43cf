import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// Input a careless or hostile client sends: each is a 4xx that says what is wrong, never a 500, and
// nothing is stored. (PostgreSQL refuses NUL characters; a body that is not JSON is not guessed at.)
describe.each(dbKinds())('hostile input (%s)', (kind) => {
  let h: Harness;
  let key: string;
  let siteId: string;
  beforeAll(async () => {
    h = await startHarness(kind);
    key = (await h.account()).key;
    siteId = (await (await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: 'base', html: '<p>x</p>' } })).json()).site.id;
  });
  afterAll(async () => h?.close());

  const expectError = async (res: Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    const body = await res.json();
    expect(body.error.code).toBe(code);
    return body.error.message as string;
  };

  it('a NUL character anywhere is a 400 naming it, and nothing is stored', async () => {
    const nul = '\u0000';
    expect(
      await expectError(await h.fetch('/api/v1/sites', { method: 'POST', key, json: { requestId: `r${nul}`, html: '<p>y</p>' } }), 400, 'validation_failed'),
    ).toMatch(/NUL character/);
    await expectError(
      await h.fetch(`/api/v1/sites/${siteId}/tables`, { method: 'POST', key, json: { name: `T${nul}`, schema: { fields: [] } } }),
      400,
      'validation_failed',
    );
    await expectError(
      await h.fetch('/api/v1/functions', { method: 'POST', key, json: { name: 'f', slug: 'f-nul', code: `export default () => 1${nul}` } }),
      400,
      'validation_failed',
    );
    await expectError(await h.fetch('/api/v1/sites/site_%00', { key }), 400, 'validation_failed');
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
    const table = await (
      await h.fetch(`/api/v1/sites/${siteId}/tables`, {
        method: 'POST',
        key,
        json: { name: 'Notes', publicInsert: true, schema: { fields: [{ name: 'msg', label: 'Message', type: 'string' }] } },
      })
    ).json();
    const insert = await fetch(table.table.pathUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ msg: `a${nul}b` }),
    });
    expect(insert.status).toBe(400);
  });

  it('an Account API body that is not JSON is a 415 that names the type to send', async () => {
    for (const [path, body] of [
      ['/api/v1/sites', 'requestId=x&html=y'],
      [`/api/v1/sites/${siteId}/tables`, 'name=x'],
      ['/api/v1/functions/invoke/nothing', 'x'],
    ] as const) {
      const res = await fetch(`${h.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, body });
      expect(await expectError(res, 415, 'unsupported_media_type'), path).toMatch(/application\/json/);
    }
    expect((await (await h.fetch('/api/v1/sites', { key })).json()).total).toBe(1);
  });
});
