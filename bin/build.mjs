#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm install` / `npm ci` / `npm pack` run it): bundles the two
// programs, cli/svc.ts and mcp/main.ts, and the Function sandbox's worker body into dist/ with esbuild
// (our TypeScript only; packages stay external), so neither a start nor a new worker compiles
// TypeScript. bin/*.mjs run dist/ when it is at least as new as every source file, and the sources
// through tsx otherwise (a clone being edited never runs stale code).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestSourceMtime } from './dist-fresh.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let esbuild;
try {
  esbuild = await import('esbuild');
} catch {
  console.error('build: esbuild is not installed (a production install); the sources run through tsx');
  process.exit(0);
}
const started = Date.now();
const sourceMtime = newestSourceMtime(root);
fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints: { svc: 'cli/svc.ts', 'svc-mcp': 'mcp/main.ts', 'sandbox-worker': 'service/functions/sandbox-worker.ts' },
  outdir: 'dist',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
fs.writeFileSync(path.join(root, 'dist', 'build.json'), `${JSON.stringify({ sourceMtime, builtAt: new Date().toISOString() })}\n`);
console.error(`build: dist/ in ${Date.now() - started} ms`);
