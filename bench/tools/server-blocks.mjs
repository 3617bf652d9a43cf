// Blocks of sequential GETs to several running servers in turn, each server's CPU per request and
// its own PostgreSQL backends' (issue 53; docs/performance.md, "Table API reads", 2026-12-06
// afternoon). For A/B work beside `npm run bench tables`: its database kept with
// BENCH_KEEP_DATABASE=1, two builds of svc and bench/bare/table-floor.mjs started on it by hand.
//
//   node bench/tools/server-blocks.mjs <blocks> <requests per block> name=pid=url ...
//
// pid: the server's process. Its backends are found by the client ports of its sockets to :5432
// (`ss`, Linux) matched in pg_stat_activity (`psql` on PGHOST/PGUSER, default 127.0.0.1/postgres).
// CPU from /proc (utime + stime, 10 ms ticks: use blocks of 500 or more). A kept-alive http.Agent,
// one request at a time: the servers run hot, so differences of ~20 µs a request show.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';

const [blocks, perBlock] = [Number(process.argv[2]), Number(process.argv[3])];
const servers = process.argv.slice(4).map((arg) => {
  const [name, pid, ...url] = arg.split('=');
  return { name, pid: Number(pid), url: url.join('='), cpu: [], db: [], ms: [], backends: [] };
});
if (!blocks || !perBlock || servers.length === 0) {
  console.error('usage: node bench/tools/server-blocks.mjs <blocks> <requests per block> name=pid=url ...');
  process.exit(2);
}

const TICK_MS = 10;
/** CPU ms of a process so far, or 0 once it is gone. */
function cpuMs(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}
const sumCpu = (pids) => pids.reduce((sum, pid) => sum + cpuMs(pid), 0);

/** The PostgreSQL backends serving `pid`'s connections. */
function backendsOf(pid) {
  const sockets = execFileSync('ss', ['-tnpH', 'state', 'established', '( dport = :5432 )'], { encoding: 'utf8' });
  const ports = sockets
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => line.trim().split(/\s+/)[2].split(':').pop());
  if (ports.length === 0) return [];
  const host = process.env.PGHOST ?? '127.0.0.1';
  const user = process.env.PGUSER ?? 'postgres';
  const query = `select pid from pg_stat_activity where client_port in (${ports.map(Number).join(',')})`;
  return execFileSync('psql', ['-h', host, '-U', user, '-At', '-c', query], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (url) =>
  new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${url}: ${res.statusCode}`))));
      })
      .on('error', reject);
  });

// Warm-up: each server's path optimised before anything is counted.
for (const s of servers) for (let i = 0; i < 2500; i++) await get(s.url);
for (const s of servers) s.backends = backendsOf(s.pid);
for (let b = 0; b < blocks; b++) {
  for (const s of b % 2 ? [...servers].reverse() : servers) {
    const [cpu0, db0] = [cpuMs(s.pid), sumCpu(s.backends)];
    for (let i = 0; i < perBlock; i++) {
      const t = performance.now();
      await get(s.url);
      s.ms.push(performance.now() - t);
    }
    s.cpu.push(((cpuMs(s.pid) - cpu0) * 1000) / perBlock);
    s.db.push(((sumCpu(s.backends) - db0) * 1000) / perBlock);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const s of servers)
  console.log(
    `${s.name.padEnd(10)} CPU µs/request ${median(s.cpu).toFixed(0).padStart(5)} [${s.cpu.map((c) => c.toFixed(0)).join(' ')}]  backends ${median(s.db).toFixed(0).padStart(5)} (${s.backends.length})  p50 ${median(s.ms).toFixed(3)} ms`,
  );
