#!/usr/bin/env node
// `npm test`: typecheck, then vitest; ends with the plain "N passed, N failed" line CI reads.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const extra = process.argv.slice(2);
const tsc = spawnSync('npx', ['tsc', '--noEmit', '-p', '.'], { stdio: 'inherit' });
if (tsc.status !== 0) {
  console.log('typecheck failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const report = '.vitest.json';
fs.rmSync(report, { force: true });
const run = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile=${report}`, ...extra], { stdio: 'inherit' });
let passed = 0;
let failed = run.status === 0 ? 0 : 1;
let skipped = 0;
try {
  const r = JSON.parse(fs.readFileSync(report, 'utf8'));
  passed = r.numPassedTests;
  // A suite that fails to load has no failed test: still count it, so a red run never reads as green.
  failed = r.numFailedTests + (run.status !== 0 && r.numFailedTests === 0 ? Math.max(1, r.numFailedTestSuites ?? 0) : 0);
  skipped = r.numPendingTests + (r.numTodoTests ?? 0);
} catch {
  // no report: vitest crashed before writing it; the failure above counts.
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(run.status ?? 1);
