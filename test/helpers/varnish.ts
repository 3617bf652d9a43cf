import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';

/** Debian's varnishd (apt-get install varnish varnish-modules), or null when it is not installed. */
export function varnishd(): string | null {
  for (const p of ['/usr/sbin/varnishd', '/usr/local/sbin/varnishd']) if (fs.existsSync(p)) return p;
  return null;
}

/** Why Varnish cannot run here (no varnishd, or no xkey vmod), or null when it can. */
export function varnishMissing(): string | null {
  const bin = varnishd();
  if (!bin) return 'varnishd is not installed (Debian: apt-get install varnish varnish-modules)';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-vcc-'));
  fs.chmodSync(dir, 0o755); // varnishd compiles as its own user
  const check = spawnSync(bin, ['-C', '-f', path.resolve('deploy/varnish/svc.vcl'), '-n', dir], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  if (check.status !== 0) return `deploy/varnish/svc.vcl does not compile here (is varnish-modules, the xkey vmod, installed?): ${check.stderr.slice(0, 300)}`;
  return null;
}

export interface Varnish {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Runs varnishd on a free loopback port with the shipped VCL (deploy/varnish/svc.vcl), its
 * backends block replaced by `backends` (round robin), in the foreground of a child process.
 */
export async function startVarnish(backends: readonly string[], port?: number): Promise<Varnish> {
  const bin = varnishd();
  if (!bin) throw new Error('varnishd is not installed');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-varnish-'));
  fs.chmodSync(dir, 0o755);
  const shipped = fs.readFileSync(path.resolve('deploy/varnish/svc.vcl'), 'utf8');
  const list = backends.map((b, i) => {
    const u = new URL(b);
    return { name: `svc${i + 1}`, host: u.hostname, port: u.port };
  });
  const block = [
    '# BEGIN backends',
    ...list.map((b) => `backend ${b.name} { .host = "${b.host}"; .port = "${b.port}"; }`),
    'sub vcl_init {',
    '    new nodes = directors.round_robin();',
    ...list.map((b) => `    nodes.add_backend(${b.name});`),
    '}',
    '# END backends',
  ].join('\n');
  const vcl = shipped.replace(/# BEGIN backends[\s\S]*# END backends/, block);
  if (vcl === shipped) throw new Error('deploy/varnish/svc.vcl has no backends block');
  const vclPath = path.join(dir, 'svc.vcl');
  fs.writeFileSync(vclPath, vcl);
  fs.chmodSync(vclPath, 0o644);
  const listen = port ?? (await freePort());
  const child: ChildProcess = spawn(bin, ['-F', '-a', `127.0.0.1:${listen}`, '-f', vclPath, '-n', path.join(dir, 'work'), '-s', 'malloc,64m', '-T', 'none'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const url = `http://127.0.0.1:${listen}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`varnishd exited (${child.exitCode}):\n${log}`);
    const up = await fetch(`${url}/healthz`).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`varnishd did not answer:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, port: listen, stop };
}
