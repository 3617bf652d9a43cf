import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  benchServiceEnv,
  cliPersonalKey,
  ensureDebianBinary,
  formatRatio,
  freePort,
  interleavedLoads,
  type LoadTarget,
  load,
  printTable,
  spawnService,
  waitForHttp,
  withChildren,
} from './lib.js';

/**
 * Hosted-site serving: GET of index.html and of a 200 KB asset, svc (separate process, embedded
 * defaults) beside nginx serving the same files and beside node:http alone answering the same bytes
 * (what any Node server pays), same load from autocannon on loopback, in interleaved rounds
 * (BENCH_SITES_ROUNDS, default 3, of BENCH_SITES_SECONDS, default 5) with medians.
 */
const ROUNDS = Number(process.env.BENCH_SITES_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SITES_SECONDS ?? 5);
const SVC_INDEX = 'svc  GET index.html (1 KB, path URL)';
const FLOOR_INDEX = 'node:http alone, same bytes (floor of Node)';
const NGINX_INDEX = 'nginx GET index.html';
const SVC_ASSET = 'svc  GET 200 KB asset';
const NGINX_ASSET = 'nginx GET 200 KB asset';

export async function run(): Promise<void> {
  const html = `<!doctype html><html><head><title>bench</title></head><body>${'<p>hello world</p>'.repeat(40)}</body></html>`;
  const asset = Buffer.alloc(200 * 1024, 'x');
  const { dir, dataDir, base, env } = await benchServiceEnv('sites');
  const key = cliPersonalKey(env);

  const svc = spawnService(env);
  let nginx: ReturnType<typeof spawn> | undefined;
  let floor: ReturnType<typeof spawn> | undefined;
  try {
    await waitForHttp(`${base}/healthz`);
    const res = await fetch(`${base}/api/v1/sites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: 'bench', html, slug: 'bench' }),
    });
    if (res.status !== 201) throw new Error(`publish failed: ${res.status} ${await res.text()}`);
    // The Account API publishes HTML only; the asset goes in like an operator's `svc site put-file`.
    const siteId = (await res.json()).site.id as string;
    await addAssetThroughAdmin(dataDir, siteId, asset);

    const nginxBin = ensureDebianBinary('nginx', 'nginx-light');
    let nginxBase: string | undefined;
    if (nginxBin) {
      const root = path.join(dir, 'www');
      fs.mkdirSync(root, { recursive: true });
      fs.writeFileSync(path.join(root, 'index.html'), html);
      fs.writeFileSync(path.join(root, 'asset.bin'), asset);
      // nginx workers run as www-data: the temp folder must be readable by them.
      for (const p of [dir, root, path.join(root, 'index.html'), path.join(root, 'asset.bin')]) fs.chmodSync(p, fs.statSync(p).isDirectory() ? 0o755 : 0o644);
      const nport = await freePort();
      const conf = path.join(dir, 'nginx.conf');
      fs.writeFileSync(
        conf,
        `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; etag on; keepalive_requests 100000;
  types { text/html html; application/octet-stream bin; }
  client_body_temp_path ${dir}/cbt; proxy_temp_path ${dir}/pt; fastcgi_temp_path ${dir}/ft; uwsgi_temp_path ${dir}/ut; scgi_temp_path ${dir}/st;
  server { listen 127.0.0.1:${nport}; root ${root}; } }`,
      );
      nginx = spawn(nginxBin, ['-c', conf, '-p', dir], { stdio: 'ignore' });
      nginxBase = `http://127.0.0.1:${nport}`;
      await waitForHttp(`${nginxBase}/index.html`);
    } else {
      console.log('nginx is not available (no apt as root): the reference rows are missing.');
    }

    // The Node floor: node:http alone answering the same bytes with the same headers, one process.
    const floorPort = await freePort();
    const floorScript = `const html = ${JSON.stringify(html)}; require('http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag: '"0123456789abcdef0123456789abcdef"', 'cache-control': 'public, max-age=0, must-revalidate', 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(html), 'x-request-id': require('crypto').randomUUID() }); s.end(html); }).listen(${floorPort}, '127.0.0.1');`;
    floor = spawn(process.execPath, ['-e', floorScript], { stdio: 'ignore' });
    await waitForHttp(`http://127.0.0.1:${floorPort}/`);

    // Warm up, then interleaved rounds, medians.
    await load('warmup', `${base}/s/bench/`, { seconds: 2 });
    const options = { seconds: SECONDS };
    const svcPids = () => [svc.pid!];
    const floorPids = () => [floor!.pid!];
    const nginxPids = () => withChildren(nginx!.pid!);
    const targets: LoadTarget[] = [
      { label: SVC_INDEX, url: `${base}/s/bench/`, options, pids: svcPids },
      { label: FLOOR_INDEX, url: `http://127.0.0.1:${floorPort}/`, options, pids: floorPids },
      ...(nginxBase ? [{ label: NGINX_INDEX, url: `${nginxBase}/index.html`, options, pids: nginxPids }] : []),
      { label: SVC_ASSET, url: `${base}/s/bench/asset.bin`, options, pids: svcPids },
      ...(nginxBase ? [{ label: NGINX_ASSET, url: `${nginxBase}/asset.bin`, options, pids: nginxPids }] : []),
    ];
    const measured = await interleavedLoads(targets, ROUNDS);
    printTable(
      `Hosted site serving (32 connections, ${ROUNDS} interleaved rounds of ${SECONDS} s each, medians; loopback; 1 svc process vs 1 nginx worker)`,
      measured.medians,
    );
    console.log(`svc / Node floor, index: ${formatRatio(measured.ratio(SVC_INDEX, FLOOR_INDEX))}`);
    if (nginxBase)
      console.log(
        `svc / nginx: index ${formatRatio(measured.ratio(SVC_INDEX, NGINX_INDEX))}, 200 KB asset ${formatRatio(measured.ratio(SVC_ASSET, NGINX_ASSET))}; goal ≥ 0.9x. Node floor / nginx, index: ${formatRatio(measured.ratio(FLOOR_INDEX, NGINX_INDEX))}`,
      );
    // Requests per CPU second, as a ratio: what each server's own code costs, whatever the load generator beside it gets.
    const us = (label: string) => measured.cpuUsPerRequest(label)?.toFixed(1) ?? '?';
    const cpu = (a: string, b: string) => {
      const r = measured.cpuRatio(a, b);
      return r ? formatRatio(r) : 'not measured (no /proc)';
    };
    console.log(
      `CPU per request (median): svc ${us(SVC_INDEX)} µs, Node floor ${us(FLOOR_INDEX)} µs${nginxBase ? `, nginx ${us(NGINX_INDEX)} µs` : ''}; svc's requests per CPU second / the floor's: ${cpu(SVC_INDEX, FLOOR_INDEX)}${nginxBase ? `, / nginx's: index ${cpu(SVC_INDEX, NGINX_INDEX)}, 200 KB asset ${cpu(SVC_ASSET, NGINX_ASSET)}` : ''}`,
    );
  } finally {
    svc.kill('SIGTERM');
    nginx?.kill('SIGTERM');
    floor?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Adds asset.bin to the site through the running service's admin endpoint (CLI token). */
async function addAssetThroughAdmin(dataDir: string, siteId: string, bytes: Buffer): Promise<void> {
  const admin = JSON.parse(fs.readFileSync(path.join(dataDir, 'admin.json'), 'utf8')) as { url: string; token: string };
  const res = await fetch(`${admin.url}/_admin/site.file.put`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-admin-token': admin.token },
    body: JSON.stringify({ siteId, path: 'asset.bin', contentBase64: bytes.toString('base64') }),
  });
  if (!res.ok) throw new Error(`adding the asset failed: ${res.status} ${await res.text()}`);
}
