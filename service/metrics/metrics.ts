import { Counter, collectDefaultMetrics, Registry } from 'prom-client';
import { HttpMetrics } from './http-metrics.js';

/**
 * What a node counts, in the Prometheus text format at `GET /metrics` (prom-client, the standard
 * Node client: one registry per node, default process metrics included). Labels are bounded: routes
 * are the registered patterns (`/api/data/:appName/:tableSlug`), never raw paths.
 */
export interface Metrics {
  registry: Registry;
  /** Every HTTP request, by method, route pattern and status, and its duration. Table API queries are the `/api/data/…` routes. */
  http: HttpMetrics;
  /**
   * Agent API payments: `required` (no payment sent), `refused` (a payment sent and refused: bad,
   * underpaid, replayed for another request, unfunded), `verified` (checked on chain, before the
   * work), `settled`, `settlement_failed` (the work stands, the money is owed), `replayed` (a stored
   * answer returned for a payment or Idempotency-Key already used).
   */
  payments: Counter<'outcome'>;
  /** Function invocations by outcome: `ok`, a failure reason (`timeout`, `out_of_memory`, …) or `busy`. */
  functionInvocations: Counter<'outcome'>;
  /** Sandboxes stopped from outside (the watchdog stopped a worker that overran its limits, or one that failed). */
  sandboxKills: Counter<'reason'>;
  /**
   * Table API record reads by how they reached the database: `own` (a statement of their own) or
   * `shared` (joined an identical read's next statement; tables/coalesced-reads.ts). Counted on arrival.
   */
  tableReads: Counter<'run'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  const registers = [registry];
  return {
    registry,
    http: new HttpMetrics(registry),
    payments: new Counter({ name: 'svc_x402_payments_total', help: 'Agent API payment outcomes', labelNames: ['outcome'], registers }),
    functionInvocations: new Counter({ name: 'svc_function_invocations_total', help: 'Function invocations by outcome', labelNames: ['outcome'], registers }),
    sandboxKills: new Counter({ name: 'svc_sandbox_kills_total', help: 'Function sandboxes stopped from outside', labelNames: ['reason'], registers }),
    tableReads: new Counter({
      name: 'svc_table_reads_total',
      help: 'Table API record reads: own statement, or shared with identical reads',
      labelNames: ['run'],
      registers,
    }),
  };
}
