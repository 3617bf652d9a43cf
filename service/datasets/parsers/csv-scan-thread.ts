import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { packagePath } from '../../package-root.js';
import type { ParseLimits } from '../records.js';
import { type CsvCopyPlan, scanCsvForCopy } from './csv-scan.js';
import type { FromScanWorker, ToScanWorker } from './csv-scan-worker.js';

/** Chunks posted to the worker and not yet taken by it: enough to keep it busy, never the file. */
const IN_FLIGHT = 4;
const WORKER_FILE = packagePath('service', 'datasets', 'parsers', 'csv-scan-worker.mjs');

/**
 * The CSV fast path's whole-file scan on a worker thread, while this thread feeds PostgreSQL's COPY.
 * On PGlite the database runs on this thread: the scan (~1 s of CPU for 80 MB) added to the COPY's
 * time instead of running beside it. On a server it also keeps the scan off the event loop that
 * answers other requests. Same answer as scanCsvForCopy on the same bytes; if the worker cannot
 * start or fails, the scan runs here on a new stream (`open`), so a conversion never fails for it.
 */
export async function scanCsvOffThread(open: () => Promise<Readable>, limits: ParseLimits, workerFile = WORKER_FILE): Promise<CsvCopyPlan | null> {
  const input = await open();
  try {
    return await scanInWorker(workerFile, input, limits);
  } catch {
    input.destroy();
    return scanCsvForCopy(await open(), limits);
  }
}

function scanInWorker(workerFile: string, input: Readable, limits: ParseLimits): Promise<CsvCopyPlan | null> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerFile, { workerData: { limits } });
    let inFlight = 0;
    let taken: (() => void) | null = null;
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      taken?.();
      input.destroy();
      void worker.terminate();
      outcome();
    };
    worker.on('message', (m: FromScanWorker) => {
      if ('ack' in m) {
        inFlight--;
        taken?.();
        taken = null;
      } else if ('plan' in m) finish(() => resolve(m.plan));
      else finish(() => reject(new Error(m.failed)));
    });
    worker.on('error', (e) => finish(() => reject(e)));
    worker.on('exit', (code) => finish(() => reject(new Error(`the CSV scan worker exited (${code}) without an answer`))));
    const post = (m: ToScanWorker) => worker.postMessage(m);
    (async () => {
      for await (const chunk of input as AsyncIterable<Buffer>) {
        while (inFlight >= IN_FLIGHT && !settled) await new Promise<void>((wake) => (taken = wake));
        if (settled) return;
        post(chunk); // copied: a stream's chunk may share its memory with others
        inFlight++;
      }
      if (!settled) post(null);
    })().catch((e: unknown) => finish(() => reject(e)));
  });
}
