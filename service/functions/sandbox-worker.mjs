// Worker-thread entry of the Function sandbox pool. Plain JS so it loads in any host (tsx CLI, vitest,
// node): it runs the bundled worker body (dist/sandbox-worker.mjs, bin/build.mjs) when that is as new
// as the sources, and otherwise imports the TypeScript through tsx's scoped loader (slower to start:
// it compiles in every new worker).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parentPort } from 'node:worker_threads';
import { freshDist } from '../../bin/dist-fresh.mjs';

const built = freshDist(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..'), 'sandbox-worker');
const { serveSandboxWorker } = built
  ? await import(pathToFileURL(built).href)
  : await (await import('tsx/esm/api')).tsImport('./sandbox-worker.ts', import.meta.url);
serveSandboxWorker(parentPort);
