import fs from 'node:fs';

/** One row of the chaos table: what was done to the service, and what it did wrong (all zeros = held). */
export interface ScenarioResult {
  scenario: string;
  /** The load it carried meanwhile, in words ("240 requests, 3 streams"). */
  load: string;
  /** The faults injected ("SIGKILL mid-stream", "PostgreSQL stopped 3 s"). */
  faults: string;
  /** Requests whose answer was checked. */
  tried: number;
  /** Answers ≥ 500 where the fault did not make 503 the right answer. */
  serverErrors: number;
  /** Acknowledged writes missing afterwards. */
  lost: number;
  /** Refused writes that changed something anyway, or half-written objects. */
  partialWrites: number;
  /** Money: settled without work, or work whose payment was neither settled nor owed. */
  moneyErrors: number;
  openRedirects: number;
  /** Kept usage counts (records, files, bytes, sites, Tables) that differ from count(*) over the data afterwards. */
  countErrors: number;
  /** Up to a few examples of what went wrong (empty when the scenario held). */
  notes: string[];
  /** What the scenario saw besides (latencies, reconcile's report, recovery time). */
  info: string[];
}

export function emptyResult(scenario: string, faults: string): ScenarioResult {
  return {
    scenario,
    load: '',
    faults,
    tried: 0,
    serverErrors: 0,
    lost: 0,
    partialWrites: 0,
    moneyErrors: 0,
    openRedirects: 0,
    countErrors: 0,
    notes: [],
    info: [],
  };
}

export function held(r: ScenarioResult): boolean {
  return r.serverErrors === 0 && r.lost === 0 && r.partialWrites === 0 && r.moneyErrors === 0 && r.openRedirects === 0 && r.countErrors === 0;
}

/** The table `npm run chaos` prints. */
export function formatTable(results: ScenarioResult[]): string {
  const head = ['scenario', 'fault', 'load held', 'checked', '5xx', 'lost', 'partial', 'money', 'redirects', 'counts', 'verdict'];
  const rows = results.map((r) => [
    r.scenario,
    r.faults,
    r.load,
    String(r.tried),
    String(r.serverErrors),
    String(r.lost),
    String(r.partialWrites),
    String(r.moneyErrors),
    String(r.openRedirects),
    String(r.countErrors),
    held(r) ? 'held' : 'FAILED',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  const details = results.flatMap((r) => [...r.notes.map((n) => `  ${r.scenario}: ${n}`), ...r.info.map((n) => `  ${r.scenario}: ${n}`)]);
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), ...details].join('\n');
}

/** `npm run chaos` sets SVC_CHAOS=full: the scenarios run at full size; `npm test` runs their short forms. */
export function chaosSize<T>(short: T, full: T): T {
  return process.env.SVC_CHAOS === 'full' ? full : short;
}

/** Appends a scenario's result to the report file `npm run chaos` prints at the end (SVC_CHAOS_REPORT). */
export function recordResult(r: ScenarioResult): void {
  const file = process.env.SVC_CHAOS_REPORT;
  if (file) fs.appendFileSync(file, `${JSON.stringify(r)}\n`);
}
