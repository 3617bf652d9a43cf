/**
 * `npm run bench [name…]`: runs every bench/<name>.ts that exports `run()` (or only the named
 * ones) and prints their figures. Load targets loopback only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// The benches start bin/svc.mjs, which runs dist/ only when it is as new as the sources (else the
// sources through tsx: slower to start, more memory). Build first so every run measures the bundle.
const root = path.resolve(here, '..');
// @ts-expect-error: a plain .mjs helper without type declarations
const { freshDist } = (await import('../bin/dist-fresh.mjs')) as { freshDist: (root: string, name: string) => string | null };
if (!freshDist(root, 'svc')) {
  const { spawnSync } = await import('node:child_process');
  spawnSync(process.execPath, [path.join(root, 'bin', 'build.mjs')], { stdio: 'inherit' });
}
const wanted = process.argv.slice(2);
const names = fs
  .readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !['run.ts', 'lib.ts'].includes(f))
  .map((f) => f.slice(0, -3))
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();

console.log(`svc benchmarks on ${process.version}, ${(await import('node:os')).cpus().length} cores: ${names.join(', ')}`);
let failed = 0;
for (const name of names) {
  const mod = (await import(`./${name}.js`)) as { run?: () => Promise<void> };
  if (typeof mod.run !== 'function') continue;
  console.log(`\n=== ${name}`);
  const started = Date.now();
  try {
    await mod.run();
  } catch (e) {
    failed++;
    console.log(`${name} failed: ${(e as Error).stack ?? e}`);
  }
  console.log(`(${name}: ${((Date.now() - started) / 1000).toFixed(1)} s)`);
}
process.exit(failed ? 1 : 0);
