import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../service/config.js';
import { startService, type RunningService } from '../../cli/server.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/svc.mjs');

// Each CLI run starts Node + tsx and, with the service stopped, PGlite: slow on a loaded machine.
describe('svc CLI and persistence across restarts (PGlite on disk)', { timeout: 240_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-'));
  const env = { ...process.env, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', PORT: '0', DATABASE_URL: '' };
  const config = loadConfig({ SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', PORT: '0' });
  let service: RunningService | undefined;
  const cli = async (...args: string[]) => {
    const r = await run(process.execPath, [BIN, ...args], { env, timeout: 180_000 }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    return { code: 'code' in r && typeof r.code === 'number' ? r.code : 0, stdout: r.stdout, stderr: r.stderr };
  };
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates an account with the service stopped (opens the database itself)', async () => {
    const r = await cli('account', 'create', '--email', 'a@b.c');
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).account.email).toBe('a@b.c');
    const again = await cli('account', 'create', '--email', 'A@B.C');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);
  });

  it('creates, lists and revokes keys through the running service; only the hash is stored', async () => {
    service = await startService(config);
    // Idle connections are the client's (or load balancer's) to close: it must not race the server.
    expect((await fetch(`${service.url}/healthz`)).headers.get('keep-alive')).toBe('timeout=65');
    const created = await cli('key', 'create', '--email', 'a@b.c', '--scopes', 'svc.publish,svc.sites.read', '--name', 'ci');
    expect(created.code).toBe(0);
    const { secret, key } = JSON.parse(created.stdout);
    expect(secret).toMatch(/^svc_pat_[\w-]{43}$/);
    expect(key.scopes).toEqual(['svc.publish', 'svc.sites.read']);
    expect(created.stderr).toContain('only time the key is shown');

    const dbDump = fs.readdirSync(dataDir);
    expect(dbDump).toContain('admin.json');
    const rows = await service.runtime.deps.db.query.personalKeys.findMany();
    expect(rows.map((r) => r.hash)).not.toContain(secret);
    expect(JSON.stringify(rows)).not.toContain(secret.slice(8));

    const publish = await fetch(`${service.url}/api/v1/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: 'cli-1', html: '<h1>kept</h1>', slug: 'kept-site' }),
    });
    expect(publish.status).toBe(201);

    const listed = JSON.parse((await cli('key', 'list', '--email', 'a@b.c')).stdout);
    expect(listed.keys).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(secret);

    const bad = await cli('key', 'create', '--email', 'a@b.c', '--scopes', 'svc.everything');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/unknown scope\(s\): svc\.everything/);
    // With nothing given, the first thing asked for is whose key it is.
    const bare = await cli('key', 'create');
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/--email is required/);

    const revoked = await cli('key', 'revoke', '--email', 'a@b.c', '--id', key.id);
    expect(JSON.parse(revoked.stdout).key.revokedAt).toBeTruthy();
    const after = await fetch(`${service.url}/api/v1/sites`, { headers: { authorization: `Bearer ${secret}` } });
    expect(after.status).toBe(401);
  });

  it('keeps accounts, keys and sites after a restart', async () => {
    await service!.stop();
    expect(fs.existsSync(path.join(dataDir, 'admin.json'))).toBe(false);
    service = await startService(config);
    const listed = JSON.parse((await cli('key', 'list', '--email', 'a@b.c')).stdout);
    expect(listed.keys[0].revokedAt).toBeTruthy();
    const page = await fetch(`${service.url}/s/kept-site/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toBe('<h1>kept</h1>');
  });

  it('puts a file into a site through the running service and prints the site as it now is', async () => {
    const [site] = await service!.runtime.deps.db.query.sites.findMany({ where: (t, { eq }) => eq(t.slug, 'kept-site') });
    const local = path.join(dataDir, 'about.html');
    fs.writeFileSync(local, '<p>about</p>');
    const put = await cli('site', 'put-file', '--site', site!.id, '--path', 'about.html', '--file', local);
    expect(put.code).toBe(0);
    const printed = JSON.parse(put.stdout).site;
    expect(printed).toMatchObject({ id: site!.id, slug: 'kept-site', status: 'updated', fileCount: 2, bytes: '<h1>kept</h1>'.length + '<p>about</p>'.length });
    expect(Date.parse(printed.updatedAt)).toBeGreaterThan(site!.updatedAt.getTime());
    expect(await (await fetch(`${service!.url}/s/kept-site/about.html`)).text()).toBe('<p>about</p>');
    const missing = await cli('site', 'put-file', '--site', 'site_nope', '--path', 'x.html', '--file', local);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/site site_nope not found/);
  });
});
