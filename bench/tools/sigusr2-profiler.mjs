// `node --import ./bench/tools/sigusr2-profiler.mjs …`: the first SIGUSR2 starts V8's CPU profiler,
// the next writes <SIGPROF_DIR or cwd>/sigusr2-<pid>-<n>.cpuprofile. A profile of a steady state
// only, without start-up and warm-up (which BENCH_CPU_PROF's whole-run profiles include).
// SIGPROF_INTERVAL: sampling interval in µs (default 100).
import fs from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: Number(process.env.SIGPROF_INTERVAL ?? 100) });
let running = false;
let written = 0;
process.on('SIGUSR2', () => {
  if (!running) {
    session.post('Profiler.start');
    running = true;
    return;
  }
  running = false;
  session.post('Profiler.stop', (err, result) => {
    if (err) return console.error(`sigusr2-profiler: ${err.message}`);
    const file = path.join(process.env.SIGPROF_DIR ?? process.cwd(), `sigusr2-${process.pid}-${written++}.cpuprofile`);
    fs.writeFileSync(file, JSON.stringify(result.profile));
  });
});
