import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashCredential } from '../../service/accounts/personal-keys.js';
import { createUpload } from '../../service/datasets/uploads.js';
import { dashboardSessions, datasetUploads, mcpTasks, oauthClients, oauthGrants, oauthTokens, publishRequests } from '../../service/db/schema/index.js';
import { taskStoreInDb } from '../../service/mcp-tasks/task-store.js';
import type { Clock } from '../../service/kernel/clock.js';
import { runHousekeeping } from '../../service/housekeeping/housekeeping.js';
import { accountOwner } from '../../service/db/owner.js';
import { createSite, deleteSite, getOwnedSite, writeSiteFile } from '../../service/sites/sites.js';
import { setRetention } from '../../service/sites/versions.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const DAY = 86_400_000;

describe.each(dbKinds())('housekeeping (%s)', (kind) => {
  let h: Harness;
  let offsetMs = 0;
  const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };
  beforeAll(async () => {
    h = await startHarness(kind, {}, { clock });
  });
  afterAll(async () => h?.close());

  const blobKeys = async (siteId: string) => (await h.deps.blobs.list(`sites/${siteId}/`)).map((b) => b.key).sort();

  it('deletes blobs nothing references once they are old, keeps young ones and every referenced file; the site still serves', async () => {
    offsetMs = 0;
    const { accountId } = await h.account();
    const owner = accountOwner(accountId);
    const site = await createSite(h.deps, owner, { html: '<h1>v1</h1>', files: [{ path: 'a.css', bytes: Buffer.from('a{color:red}') }], status: 'published' });
    const [indexV1] = (await blobKeys(site.id)).filter((k) => k.includes('files/'));
    // A redeploy of the same bytes keeps the blob; a change writes a new one and orphans the old.
    await writeSiteFile(h.deps, await getOwnedSite(h.deps.db, owner, site.id), { path: 'a.css', bytes: Buffer.from('a{color:red}') });
    expect(await blobKeys(site.id)).toHaveLength(2);
    await writeSiteFile(h.deps, await getOwnedSite(h.deps.db, owner, site.id), { path: 'a.css', bytes: Buffer.from('a{color:blue}') });
    const afterChange = await blobKeys(site.id);
    expect(afterChange).toHaveLength(3);
    // What a crash leaves: the files of a site deleted before its blobs were (deleteSiteBlobs never
    // ran), bytes written for it later, and the bytes of a write that rolled back.
    const gone = await createSite(h.deps, owner, { html: '<p>gone</p>', status: 'published' });
    await deleteSite(h.deps, gone);
    await h.deps.blobs.put(`sites/${gone.id}/files/leftover`, Buffer.from('x'));
    await h.deps.blobs.put(`sites/${site.id}/files/rolled-back`, Buffer.from('y'));

    // Young: nothing is deleted.
    expect((await runHousekeeping(h.deps, { force: true }))?.orphanBlobs).toBe(0);
    expect(await blobKeys(site.id)).toHaveLength(4);

    // Two days later: the three leftovers go; the replaced a.css stays, a kept version (of the last 20,
    // and younger than 30 days) names it; index.html and the new a.css stay.
    offsetMs = 2 * DAY;
    const report = await runHousekeeping(h.deps, { force: true });
    expect(report).toMatchObject({ orphanBlobs: 3, versions: 0 });
    expect(await blobKeys(site.id)).toHaveLength(3);
    expect(await blobKeys(gone.id)).toEqual([]);
    // Past the account's retention (the last version only): the older versions go, and with them the replaced a.css.
    await setRetention(h.deps, accountId, { keepLast: 1, keepDays: 0 });
    expect(await runHousekeeping(h.deps, { force: true })).toMatchObject({ versions: 2, orphanBlobs: 1 });
    const left = await blobKeys(site.id);
    expect(left).toHaveLength(2);
    expect(left).toContain(indexV1);
    offsetMs = 0;
    const served = await h.fetch(`/s/${site.slug}/a.css`);
    expect(await served.text()).toBe('a{color:blue}');
    expect(await (await h.fetch(`/s/${site.slug}/`)).text()).toBe('<h1>v1</h1>');
  });

  it('forgets expired sessions, OAuth codes and tokens, revoked grants, old publish requests and abandoned uploads, keeping live ones', async () => {
    offsetMs = 0;
    const { accountId } = await h.account();
    const db = h.deps.db;
    const now = Date.now();
    await db.insert(dashboardSessions).values([
      { hash: hashCredential(`old-${accountId}`), accountId, expiresAt: new Date(now - 1000) },
      { hash: hashCredential(`live-${accountId}`), accountId, expiresAt: new Date(now + DAY) },
    ]);
    const clientId = `client-${accountId}`;
    await db.insert(oauthClients).values({ id: clientId, name: 'c', redirectUris: ['http://127.0.0.1/cb'] });
    await db.insert(oauthGrants).values([
      { id: `live-${accountId}`, accountId, clientId, scopes: ['sites:read'] },
      { id: `dead-${accountId}`, accountId, clientId, scopes: ['sites:read'], revokedAt: new Date(now - 31 * DAY) },
    ]);
    await db.insert(oauthTokens).values([
      { hash: `expired-${accountId}`, kind: 'access', grantId: `live-${accountId}`, scopes: [], expiresAt: new Date(now - 2 * DAY) },
      { hash: `live-${accountId}`, kind: 'refresh', grantId: `live-${accountId}`, scopes: [], expiresAt: new Date(now + DAY) },
    ]);
    await db.insert(publishRequests).values([
      { accountId, requestId: 'old', siteId: 'site_x', createdAt: new Date(now - 31 * DAY) },
      { accountId, requestId: 'new', siteId: 'site_y' },
    ]);
    const site = await createSite(h.deps, accountOwner(accountId), { html: '<p>data</p>', status: 'published' });
    const upload = await createUpload(h.deps, site, { fileName: 'rows.csv', fileSize: 4 });
    await h.deps.blobs.put(upload.key, Buffer.from('a\n1\n'));

    const before = await runHousekeeping(h.deps, { force: true });
    expect(before).toMatchObject({ sessions: 1, oauthTokens: 1, oauthGrants: 1, publishRequests: 1, uploads: 0 });
    expect(await db.select().from(dashboardSessions).where(eq(dashboardSessions.accountId, accountId))).toHaveLength(1);
    expect((await db.select().from(oauthGrants).where(eq(oauthGrants.accountId, accountId))).map((g) => g.id)).toEqual([`live-${accountId}`]);
    expect((await db.select().from(publishRequests).where(eq(publishRequests.accountId, accountId))).map((r) => r.requestId)).toEqual(['new']);

    // The upload slot expires (SVC_DATASET_UPLOAD_TTL_SECONDS) and an hour passes without a convert.
    offsetMs = h.config.datasets.uploadTtlSeconds * 1000 + 2 * 3_600_000;
    expect((await runHousekeeping(h.deps, { force: true }))?.uploads).toBe(1);
    expect(await db.select().from(datasetUploads).where(eq(datasetUploads.siteId, site.id))).toEqual([]);
    expect(await h.deps.blobs.head(upload.key)).toBeNull();
    offsetMs = 0;
  });

  it('forgets MCP tasks past their time to live, keeping live ones', async () => {
    offsetMs = 0;
    const store = taskStoreInDb(h.deps.db);
    const now = clock.now();
    const task = (taskId: string, startedMsAgo: number) =>
      store.create({ taskId, owner: 'o', tool: 'deploy_site', statusMessage: null, ttlMs: 3_600_000, leaseUntil: now }, new Date(now.getTime() - startedMsAgo));
    await task('expired-task', 3_600_000 + 1000);
    await task('live-task', 60_000);
    expect((await runHousekeeping(h.deps, { force: true }))?.mcpTasks).toBe(1);
    expect((await h.deps.db.select({ id: mcpTasks.id }).from(mcpTasks)).map((t) => t.id)).toEqual(['live-task']);
  });

  it('one node at a time: a second run within the lease does nothing', async () => {
    offsetMs = 10 * DAY; // past any lease an earlier test took
    expect(await runHousekeeping(h.deps)).not.toBeNull();
    expect(await runHousekeeping(h.deps)).toBeNull();
    offsetMs = 0;
  });
});
