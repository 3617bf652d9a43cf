import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { formatTable, held, type ScenarioResult } from './report.js';

// `npm run chaos`: every scenario of test/chaos at full size (SVC_CHAOS=full), one file at a time so
// the faults do not share the machine, then one table of what each scenario did and what held.
const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-chaos-')), 'results.jsonl');
const run = spawnSync('npx', ['vitest', 'run', 'test/chaos', '--maxWorkers=1', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, SVC_CHAOS: 'full', SVC_CHAOS_REPORT: report },
});
const results: ScenarioResult[] = fs.existsSync(report)
  ? fs
      .readFileSync(report, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as ScenarioResult)
  : [];
fs.rmSync(path.dirname(report), { recursive: true, force: true });
console.log(`\n${formatTable(results)}\n`);
const failed = results.filter((r) => !held(r)).length;
console.log(`${results.length} scenarios: ${results.length - failed} held, ${failed} did not${run.status === 0 ? '' : ` (vitest exit ${run.status})`}`);
process.exit(run.status === 0 && failed === 0 ? 0 : 1);
