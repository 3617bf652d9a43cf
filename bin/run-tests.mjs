#!/usr/bin/env node
// `npm test`: lint and format check (Biome), typecheck, then vitest; ends with the plain
// "N passed, N failed" line CI reads (a failed check counts as one failure, and vitest still runs
// so the run shows everything at once).
// `npm run test:fast` (--fast): the edit–test loop — no checks, PGlite only, no suite that spawns
// processes (vitest.config.ts lists them).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';

// Biome runs through npx at a pinned version, not as a devDependency: its platform binaries are
// optional dependencies, and a registry that lacks some of them (the mirror CI uses holds only the
// Linux ones) leaves a lockfile `npm ci` refuses. Keep in step with package.json's lint script.
const BIOME = '@biomejs/biome@2.6.8';
const fast = process.argv.includes('--fast');
const extra = process.argv.slice(2).filter((a) => a !== '--fast');
const env = { ...process.env };
let failedChecks = 0;
// tsc keeps what it learned between runs here: a re-run after a small edit takes ~6 s, not ~20 s.
const incremental = (name) => ['--incremental', '--tsBuildInfoFile', `node_modules/.cache/tsc/${name}.tsbuildinfo`];
if (fast) {
  env.SVC_TEST_TIER = 'fast';
  delete env.TEST_DATABASE_URL;
} else {
  const checks = [
    ['lint and format (npm run lint)', ['--yes', BIOME, 'ci', '--error-on-warnings', '.']],
    ['typecheck of the product, Node types only (npm run typecheck)', ['tsc', '--noEmit', '-p', '.', ...incremental('product')]],
    ['typecheck of tests, benchmarks and chaos scenarios', ['tsc', '--noEmit', '-p', 'tsconfig.test.json', ...incremental('tests')]],
  ];
  // The checks run side by side (two cores: the typechecks took ~23 s each in a row); each one's
  // output is printed whole when it ends.
  const results = await Promise.all(
    checks.map(
      ([name, args]) =>
        new Promise((resolve) => {
          const child = spawn('npx', args, { stdio: ['ignore', 'pipe', 'pipe'] });
          let output = '';
          child.stdout.on('data', (d) => (output += d));
          child.stderr.on('data', (d) => (output += d));
          child.on('close', (status) => resolve({ name, status, output }));
        }),
    ),
  );
  for (const { name, status, output } of results) {
    process.stdout.write(output);
    if (status !== 0) {
      failedChecks++;
      console.log(`${name} failed`);
    }
  }
}
const report = '.vitest.json';
fs.rmSync(report, { force: true });
const run = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile=${report}`, ...extra], { stdio: 'inherit', env });
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
console.log(`${passed} passed, ${failed + failedChecks} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(run.status === 0 && failedChecks === 0 ? 0 : 1);
