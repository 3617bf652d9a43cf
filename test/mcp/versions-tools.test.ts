import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { call, connectHttp, text } from './helpers.js';

describe('the versions toolset: an account lists its app versions, rolls back and reads traffic through MCP', () => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    h = await startHarness('pglite');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-versions-tools-'));
  });
  afterAll(async () => {
    await h?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('not listed by default (its call says how to turn it on); listed with SVC_TOOLSETS=default,versions, where it works', async () => {
    const { key } = await h.account();
    const env = { SVC_URL: h.url, SVC_API_KEY: key, SVC_SPEND_LEDGER: path.join(dir, 'ledger.json') };
    const plain = await connectHttp(env);
    try {
      const names = (await plain.client.listTools()).tools.map((t) => t.name);
      expect(names).not.toContain('account_rollback_app');
      expect(text(await call(plain.client, 'account_rollback_app', { appId: 'x', version: 1 }))).toMatch(/"versions" toolset/);
    } finally {
      await plain.close();
    }
    const s = await connectHttp({ ...env, SVC_TOOLSETS: 'default,versions' });
    try {
      // Over HTTP every client is offered the views: a rollback shows in the site preview, as a publish does.
      const rollbackTool = (await s.client.listTools()).tools.find((t) => t.name === 'account_rollback_app');
      expect(rollbackTool?._meta).toMatchObject({ ui: { resourceUri: 'ui://svc/site' } });
      const published = await call(s.client, 'account_publish_app', { requestId: 'v1', html: '<h1>one</h1>', appName: 'tool-versions' });
      expect(published.isError, text(published)).toBeFalsy();
      await h.fetch('/api/v1/sites/tool-versions/files', { method: 'POST', key, json: { files: [{ path: 'index.html', content: '<h1>two</h1>' }] } });
      const listed = await call(s.client, 'account_list_app_versions', { appId: 'tool-versions' });
      expect(listed.isError, text(listed)).toBeFalsy();
      expect(listed.structuredContent).toMatchObject({ current: 2, total: 2 });
      const back = await call(s.client, 'account_rollback_app', { appId: 'tool-versions', version: 1, requestId: 'mcp-back' });
      expect(back.isError, text(back)).toBeFalsy();
      expect(back.structuredContent).toMatchObject({ version: { version: 3, rollbackOf: 1, current: true } });
      expect(await (await fetch(`${h.url}/s/tool-versions/`)).text()).toBe('<h1>one</h1>');
      const traffic = await call(s.client, 'account_app_traffic', { appId: 'tool-versions', days: 1 });
      expect(traffic.isError, text(traffic)).toBeFalsy();
      expect((traffic.structuredContent as { days: unknown[] }).days).toHaveLength(1);
    } finally {
      await s.close();
    }
  });
});
