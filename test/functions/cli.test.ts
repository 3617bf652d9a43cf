import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../service/config.js';
import { startService, type RunningService } from '../../cli/server.js';

const BIN = path.resolve('bin/svc.mjs');

describe('svc function secret / access through the running service', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-fn-cli-'));
  const env = { ...process.env, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', PORT: '0', DATABASE_URL: '' };
  let service: RunningService | undefined;
  const cli = (args: string[], stdin?: string) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], { env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
      child.stdin.end(stdin ?? '');
    });
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('sets a secret from stdin without echoing it, lists names, toggles access, deletes', { timeout: 180_000 }, async () => {
    // With the service running, every command goes through its loopback admin endpoint.
    service = await startService(loadConfig({ SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent', PORT: '0' }));
    expect((await cli(['account', 'create', '--email', 'owner@example.com'])).code).toBe(0);
    expect((await cli(['account', 'create', '--email', 'other@example.com'])).code).toBe(0);
    const key = async (email: string) => JSON.parse((await cli(['key', 'create', '--email', email, '--all-scopes'])).stdout).secret as string;
    const owner = await key('owner@example.com');
    const other = await key('other@example.com');
    const api = (p: string, k: string, init: { method?: string; json?: unknown } = {}) =>
      fetch(`${service!.url}${p}`, {
        method: init.method ?? 'GET',
        headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });

    const created = await (
      await api('/api/v1/functions', owner, { method: 'POST', json: { name: 'cli', slug: 'cli-fn', code: 'export default () => SVC_SECRETS.TOKEN ?? "none"' } })
    ).json();
    await api(`/api/v1/functions/${created.function.id}/publish`, owner, { method: 'POST' });

    const set = await cli(['function', 'secret', 'set', '--email', 'owner@example.com', '--function', 'cli-fn', '--name', 'TOKEN'], 'from-stdin-123\n');
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout).secretNames).toEqual(['TOKEN']);
    expect(set.stdout + set.stderr).not.toContain('from-stdin-123');
    const listed = await cli(['function', 'secret', 'list', '--email', 'owner@example.com', '--function', created.function.id]);
    expect(JSON.parse(listed.stdout)).toEqual({ functionId: created.function.id, secretNames: ['TOKEN'] });

    const invoke = (k: string) => api('/api/v1/functions/invoke/cli-fn', k, { method: 'POST', json: { method: 'GET', path: '/' } });
    expect((await (await invoke(owner)).json()).response.body).toBe('from-stdin-123'); // trailing newline stripped
    expect((await invoke(other)).status).toBe(404);

    expect((await cli(['function', 'access', '--email', 'owner@example.com', '--function', 'cli-fn', '--enable'])).code).toBe(0);
    expect((await invoke(other)).status).toBe(200);
    // Someone else's account cannot reach it through the CLI either.
    const foreign = await cli(['function', 'secret', 'list', '--email', 'other@example.com', '--function', 'cli-fn']);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/not found/);

    const del = await cli(['function', 'secret', 'delete', '--email', 'owner@example.com', '--function', 'cli-fn', '--name', 'TOKEN']);
    expect(JSON.parse(del.stdout)).toMatchObject({ deleted: true, secretNames: [] });
    expect((await (await invoke(owner)).json()).response.body).toBe('none');

    const bad = await cli(['function', 'access', '--email', 'owner@example.com', '--function', 'cli-fn']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--enable or --disable/);
  });
});
