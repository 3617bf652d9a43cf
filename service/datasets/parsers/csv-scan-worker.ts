import { Readable } from 'node:stream';
import type { MessagePort } from 'node:worker_threads';
import type { ParseLimits } from '../records.js';
import { type CsvCopyPlan, scanCsvForCopy } from './csv-scan.js';

/** Parent → worker: a chunk of the file, or null at its end. */
export type ToScanWorker = Uint8Array | null;
/** Worker → parent: a chunk was taken (the parent may send another), or the outcome. */
export type FromScanWorker = { ack: true } | { plan: CsvCopyPlan | null } | { failed: string };

/**
 * The body of the CSV scan's worker thread (csv-scan-thread.ts): scanCsvForCopy over the chunks the
 * parent posts, one answer at the end. Each chunk taken is acknowledged, so the parent keeps only a
 * few in flight (a file is never queued here whole).
 */
export function serveCsvScan(port: MessagePort, limits: ParseLimits): void {
  const queue: ToScanWorker[] = [];
  let wake: (() => void) | null = null;
  port.on('message', (m: ToScanWorker) => {
    queue.push(m);
    wake?.();
    wake = null;
  });
  async function* chunks(): AsyncGenerator<Buffer> {
    for (;;) {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const chunk = queue.shift()!;
      if (chunk === null) return;
      port.postMessage({ ack: true } satisfies FromScanWorker);
      yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
  }
  scanCsvForCopy(Readable.from(chunks()), limits).then(
    (plan) => port.postMessage({ plan } satisfies FromScanWorker),
    (e: unknown) => port.postMessage({ failed: e instanceof Error ? e.message : String(e) } satisfies FromScanWorker),
  );
}
