import http from 'node:http';
import { startVarnish, varnishMissing } from '../test/helpers/varnish.js';
import { benchServiceEnv, cliPersonalKey, cpuMs, freePort, seededRandom, spawnService, waitForHttp, withChildren } from './lib.js';

/**
 * A CDN in front of a popular site: the same page views (a page, chosen with a Zipf-like skew among
 * PAGES, then its app.css and app.js) against svc alone (a service with no CDN set) and through
 * Debian's Varnish running deploy/varnish/svc.vcl in front of another (SVC_CDN_PURGE=varnish), while the owner changes one page every CHANGE_EVERY views (each change
 * purges through the outbox). Interleaved rounds; counts what reached svc (Varnish's X-Cache: MISS)
 * and svc's CPU per 1,000 page views. BENCH_CDN_VIEWS (default 6000) views per round, ROUNDS 2.
 */
const VIEWS = Number(process.env.BENCH_CDN_VIEWS ?? 6000);
const ROUNDS = Number(process.env.BENCH_CDN_ROUNDS ?? 2);
const PAGES = 50;
const CHANGE_EVERY = 1000;
const CONCURRENCY = 16;

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function get(port: number, path: string): Promise<{ status: number; cache: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, cache: res.headers['x-cache'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Pass {
  label: string;
  viewsPerSec: number;
  requests: number;
  origin: number;
  cpuMsPer1000: number | undefined;
  errors: number;
}

export async function run(): Promise<void> {
  const missing = varnishMissing();
  if (missing) {
    console.log(`cdn: skipped: ${missing}`);
    return;
  }
  const varnishPort = await freePort();
  // Two services, each on its own embedded database with the same site: svc alone (no CDN set, so
  // its fast path answers cached files, as a deployment without a CDN runs) and the CDN's origin
  // (SVC_CDN_PURGE: every request it sees is a miss, answered from the committed site row).
  const alone = await benchServiceEnv('cdn-alone');
  const origin = await benchServiceEnv('cdn', { SVC_CDN_PURGE: 'varnish', SVC_CDN_PURGE_URL: `http://127.0.0.1:${varnishPort}` });
  const services = [alone, origin].map((s) => ({ ...s, key: cliPersonalKey(s.env), child: spawnService(s.env), siteId: '' }));
  const varnish = await startVarnish([origin.base], varnishPort);
  try {
    const page = (i: number, rev: number) =>
      `<!doctype html><title>page ${i}</title><link rel=stylesheet href=app.css><script src=app.js></script>${'<p>text</p>'.repeat(100)}<!-- ${rev} -->`;
    const files = [
      ...Array.from({ length: PAGES - 1 }, (_, i) => ({ path: `p${i + 1}.html`, content: page(i + 1, 0) })),
      { path: 'app.css', content: 'body{margin:0}'.repeat(200) },
      { path: 'app.js', content: 'console.log(1);'.repeat(400) },
    ];
    const api = (service: (typeof services)[number], method: string, path: string, body: unknown) =>
      fetch(`${service.base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${service.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const service of services) {
      await waitForHttp(`${service.base}/healthz`);
      const made = await api(service, 'POST', '/sites', { requestId: 'bench-cdn', html: page(0, 0), slug: 'popular', files });
      if (made.status !== 201) throw new Error(`publish failed: ${made.status} ${await made.text()}`);
      service.siteId = (await made.json()).site.id as string;
    }
    let rev = 0;

    /** The page views against `port`; the changes and the CPU are `service`'s. */
    async function pass(label: string, port: number, service: (typeof services)[number]): Promise<Pass> {
      const random = seededRandom(7);
      // Zipf-like: page k with weight 1/(k+1).
      const weights = Array.from({ length: PAGES }, (_, k) => 1 / (k + 1));
      const total = weights.reduce((a, b) => a + b, 0);
      const pick = () => {
        let r = random() * total;
        for (let k = 0; k < PAGES; k++) {
          r -= weights[k]!;
          if (r <= 0) return k;
        }
        return PAGES - 1;
      };
      const paths = Array.from({ length: VIEWS }, () => {
        const k = pick();
        return k === 0 ? '/s/popular/' : `/s/popular/p${k}`;
      });
      let next = 0;
      let origin = 0;
      let requests = 0;
      let errors = 0;
      const pids = withChildren(service.child.pid!);
      const cpuBefore = cpuMs(pids);
      const started = performance.now();
      const worker = async () => {
        for (;;) {
          const v = next++;
          if (v >= paths.length) return;
          if (v > 0 && v % CHANGE_EVERY === 0) {
            const changed = await api(service, 'POST', `/sites/${service.siteId}/files`, { files: [{ path: 'p1.html', content: page(1, ++rev) }] });
            if (changed.status !== 200) errors++;
          }
          for (const p of [paths[v]!, '/s/popular/app.css', '/s/popular/app.js']) {
            const r = await get(port, p);
            requests++;
            if (r.status !== 200) errors++;
            if (r.cache !== 'HIT') origin++; // svc alone: every request is an origin request
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const seconds = (performance.now() - started) / 1000;
      const cpuAfter = cpuMs(pids);
      return {
        label,
        viewsPerSec: VIEWS / seconds,
        requests,
        origin,
        cpuMsPer1000: cpuBefore !== undefined && cpuAfter !== undefined ? ((cpuAfter - cpuBefore) * 1000) / VIEWS : undefined,
        errors,
      };
    }

    const passes: Pass[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      passes.push(await pass('svc alone', Number(new URL(alone.base).port), services[0]!));
      passes.push(await pass('Varnish in front (deploy/varnish/svc.vcl)', varnishPort, services[1]!));
    }
    console.log(
      `${VIEWS} page views per round (a page of ${PAGES}, Zipf-like, + app.css + app.js), ${CONCURRENCY} at once, one page changed every ${CHANGE_EVERY} views; ${ROUNDS} interleaved rounds`,
    );
    console.log(
      'round  target                                        views/s  requests  origin requests  per 1,000 views  hit ratio  svc CPU ms / 1,000 views  errors',
    );
    passes.forEach((p, i) => {
      const hit = 1 - p.origin / p.requests;
      console.log(
        `${String(Math.floor(i / 2) + 1).padEnd(6)} ${p.label.padEnd(45)} ${p.viewsPerSec.toFixed(0).padStart(7)}  ${String(p.requests).padStart(8)}  ${String(p.origin).padStart(15)}  ${((p.origin * 1000) / VIEWS).toFixed(1).padStart(15)}  ${(hit * 100).toFixed(1).padStart(8)} %  ${(p.cpuMsPer1000?.toFixed(0) ?? 'n/a').padStart(24)}  ${p.errors}`,
      );
    });
  } finally {
    await varnish.stop();
    for (const service of services) service.child.kill('SIGTERM');
    agent.destroy();
  }
}
