// Worker-thread entry of the CSV scan (csv-scan-thread.ts). Plain JS so it loads in any host (tsx CLI,
// vitest, node): it runs the bundled body (dist/csv-scan-worker.mjs, bin/build.mjs) when that is as
// new as the sources, and otherwise imports the TypeScript through tsx's scoped loader.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import { freshDist } from '../../../bin/dist-fresh.mjs';

const built = freshDist(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..'), 'csv-scan-worker');
const { serveCsvScan } = built
  ? await import(pathToFileURL(built).href)
  : await (await import('tsx/esm/api')).tsImport('./csv-scan-worker.ts', import.meta.url);
serveCsvScan(parentPort, workerData.limits);
