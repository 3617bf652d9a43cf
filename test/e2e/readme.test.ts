import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagePath } from '../../service/kernel/package-root.js';
import { freePort } from '../helpers/ports.js';

// The README's first screen, run as a newcomer types it (as the pack test runs the tarball): its
// bash blocks line by line in the clone, `npm start` as the long-running service, and its SDK snippet
// both ways (hosted /mcp with the key, svc-mcp over stdio). Only the port and the key are put in.
const readme = fs.readFileSync(packagePath('README.md'), 'utf8');
const firstScreen = readme.slice(readme.indexOf('## Five minutes'), readme.indexOf('# Reference'));
const FENCE = '```';
const blocks = (lang: string) => [...firstScreen.matchAll(new RegExp(`${FENCE}${lang}\\n([\\s\\S]*?)${FENCE}`, 'g'))].map((m) => m[1]!);
const commands = blocks('bash')
  .flatMap((b) => b.split('\n'))
  .map((l) => l.trim())
  .filter(Boolean);
const snippet = blocks('js')[0]!;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-readme-'));
const snippetFile = packagePath(`hello-mcp-${randomBytes(4).toString('hex')}.mjs`);
let port: number;
let service: ChildProcess | undefined;
let key = '';
const env = () => ({ ...process.env, PORT: String(port), SVC_DATA_DIR: dataDir, SVC_MCP_PORT: 'off', SVC_DEV_CHAIN_PORT: '0', DATABASE_URL: '' });
const typed = (line: string) => line.replaceAll('localhost:8787', `localhost:${port}`).replaceAll('svc_pat_…', key);

function run(line: string): { code: number | null; out: string; err: string } {
  const r = spawnSync('bash', ['-c', typed(line)], { cwd: packagePath(), env: env(), encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

beforeAll(async () => {
  port = await freePort();
}, 10_000);
afterAll(async () => {
  if (service && service.exitCode === null) {
    const exited = new Promise((r) => service!.once('exit', r));
    service.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(snippetFile, { force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

describe("the README's five minutes, as typed", () => {
  it('has the commands in the order a newcomer runs them', () => {
    expect(commands[0]).toBe('npm install');
    expect(commands[1]).toBe('npm start');
    expect(commands.slice(2).map((c) => c.split(' ').slice(0, 4).join(' '))).toEqual([
      'npm run svc --',
      'npm run svc --',
      'curl -X POST http://localhost:8787/api/v1/sites',
      'curl http://localhost:8787/s/hello/',
    ]);
    expect(snippet.split('\n').filter(Boolean).length).toBeLessThanOrEqual(12);
  });

  it('npm start serves, the account and key are made, the page is published and seen', async () => {
    // `npm install` has run (this test runs in the installed clone).
    service = spawn('npm', ['start'], { cwd: packagePath(), env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    service.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    await new Promise<void>((resolve, reject) => {
      service!.stderr!.on('data', (d: Buffer) => {
        log += d.toString();
        if (log.includes('Next steps')) resolve();
      });
      service!.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${log}`)));
    });
    // The banner names the README's commands, in the form that works in a clone.
    expect(log).toContain('npm run svc -- account create --email you@example.com');
    expect(log).toContain(`then open http://localhost:${port}/s/hello/`);

    const [, , account, keyLine, publish, see] = commands;
    expect(run(account!).code).toBe(0);
    const made = run(keyLine!);
    expect(made.code).toBe(0);
    // The key is shown once, on the line after "Store it now:" (as the README says: copy it).
    key = /Store it now:\n(svc_pat_\S+)/.exec(made.err)?.[1] ?? '';
    expect(key).not.toBe('');

    const published = run(publish!);
    expect(published.code).toBe(0);
    const body = JSON.parse(published.out); // curl's progress meter is on stderr
    expect(body).toMatchObject({ ok: true, site: { slug: 'hello', pathUrl: `http://localhost:${port}/s/hello/` } });
    expect(Object.keys(body.site).indexOf('pathUrl')).toBeLessThan(Object.keys(body.site).indexOf('url'));

    const seen = run(see!);
    expect(seen.code).toBe(0);
    expect(seen.out).toContain('<h1>Hello</h1>');
  }, 180_000);

  it.each(['hosted', 'stdio'])(
    'the SDK snippet connects (%s) and lists the app',
    (how) => {
      expect(key).not.toBe('');
      fs.writeFileSync(snippetFile, typed(snippet));
      const r = spawnSync(process.execPath, [snippetFile, ...(how === 'stdio' ? ['stdio'] : [])], {
        cwd: packagePath(),
        env: { ...env(), SVC_API_KEY: key },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain('hello');
    },
    90_000,
  );
});
