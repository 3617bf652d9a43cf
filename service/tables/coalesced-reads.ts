/**
 * Identical reads share a run that has not started yet, never one already started. Every answer
 * therefore comes from a statement that started after its request arrived, so it sees every write
 * acknowledged before the request, on any node: the same guarantee as one statement per request,
 * with nothing cached and nothing to invalidate. Per key there is at most one run in the database
 * and one pending: a read joins the pending run, or makes one. A pending run starts once no run of
 * its key is running, after the requests already received have been read (`setImmediate`): PGlite
 * executes a statement synchronously, so without that turn of the event loop no request could ever
 * arrive while a run is pending. Under many clients asking the same thing (a public page's list),
 * the database answers once per round instead of once per client.
 */
export class CoalescedReads<T> {
  private readonly running = new Set<string>();
  private readonly pending = new Map<string, Pending<T>>();

  /** `arrived` is told of each read on arrival: whether it joined another read's run. */
  constructor(private readonly arrived: (shared: boolean) => void = () => {}) {}

  /** The answer of a run of `key` (this `run`, or an identical one) that starts after this call. */
  read(key: string, run: () => Promise<T>): Promise<T> {
    const joined = this.pending.get(key);
    this.arrived(joined !== undefined);
    if (joined) return joined.promise;
    let resolve!: (value: T) => void;
    let reject!: (reason: unknown) => void;
    const promise = new Promise<T>((a, b) => {
      resolve = a;
      reject = b;
    });
    this.pending.set(key, { run, promise, resolve, reject });
    if (!this.running.has(key)) setImmediate(() => this.start(key));
    return promise;
  }

  private start(key: string): void {
    const next = this.pending.get(key);
    if (!next) return;
    this.pending.delete(key);
    this.running.add(key);
    const done = () => {
      this.running.delete(key);
      if (this.pending.has(key)) setImmediate(() => this.start(key));
    };
    Promise.resolve().then(next.run).then(next.resolve, next.reject).finally(done);
  }
}

interface Pending<T> {
  run: () => Promise<T>;
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}
