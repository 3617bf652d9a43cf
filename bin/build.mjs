#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm install` / `npm ci` / `npm pack` run it): bundles the two
// programs, cli/svc.ts and mcp/main.ts, and the Function sandbox's worker body into dist/ with esbuild
// (our TypeScript only; packages stay external), so neither a start nor a new worker compiles
// TypeScript; and the migrated PGlite data dir a first start loads instead of running initdb
// (dist/pglite-template.tar.gz, ~5 s of the build). bin/*.mjs run dist/ when it is at least as new as every source file, and the sources
// through tsx otherwise (a clone being edited never runs stale code).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestSourceMtime } from './dist-fresh.mjs';
import { packSvcMcp } from './pack-svc-mcp.mjs';

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
const common = {
  absWorkingDir: root,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
};
// The service keeps its runtime dependencies external (PGlite and QuickJS load wasm files beside
// their modules), except viem and @x402/extensions, bundled (pure JavaScript): importing viem's
// package reads and compiles its whole index (~360 modules, ~250 ms of every start, most of it
// unused), the bundle only the functions svc calls; @x402/extensions would import the package again.
// A bundled package's CommonJS parts get a `require` of their own, as in svc-mcp's bundle below.
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const BUNDLED = ['viem', '@x402/extensions'];
await esbuild.build({
  ...common,
  entryPoints: { svc: 'cli/svc.ts', 'sandbox-worker': 'service/functions/sandbox-worker.ts', 'pglite-template': 'service/db/pglite-template.ts' },
  outdir: 'dist',
  external: [...Object.keys(pkg.dependencies), ...Object.keys(pkg.optionalDependencies ?? {})].filter((name) => !BUNDLED.includes(name)),
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
});
// svc-mcp, an MCP client's child process, bundles its packages too: resolving, reading and compiling
// some hundred package files was most of the time before `initialize` could be answered (1.1–1.4 s →
// 0.4–0.7 s here). CommonJS packages inside the bundle get a `require` of their own.
await esbuild.build({
  ...common,
  entryPoints: { 'svc-mcp': 'mcp/main.ts' },
  outdir: 'dist/mcp',
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
});
// The migrated PGlite data dir a first start loads instead of running initdb (service/db/pglite-template.ts).
const { writePgliteTemplate } = await import(path.join(root, 'dist', 'pglite-template.mjs'));
await writePgliteTemplate(path.join(root, 'dist', 'pglite-template.tar.gz'));
// The svc-mcp package a running svc serves (bin/pack-svc-mcp.mjs); without npm, the service says it was not built.
try {
  packSvcMcp(root);
} catch (e) {
  console.error(`build: no svc-mcp package (${e.message}); {base}/mcp/svc-mcp.tgz will answer 404`);
}
fs.writeFileSync(path.join(root, 'dist', 'build.json'), `${JSON.stringify({ sourceMtime, builtAt: new Date().toISOString() })}\n`);
console.error(`build: dist/ in ${Date.now() - started} ms`);
