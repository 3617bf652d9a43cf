/**
 * A Map that keeps its `capacity` most recently used entries: a read or a write marks an entry used,
 * and a write past the capacity drops the least recently used one. Map order is insertion order, so
 * re-inserting an entry on use is all the bookkeeping.
 */
export class LruMap<K, V> {
  private readonly entries = new Map<K, V>();
  /**
   * The key last marked used: already the newest, it is not re-inserted. A read re-inserting its entry
   * at every hit (a hot table's lookup, twice per Table API read) made the Map rebuild its table every
   * few reads, each new table allocated in the old generation since the Map lives there: 12 µs of a
   * read's CPU in a profile (docs/performance.md, issue 53).
   */
  private newest: K | undefined;

  /** `evicted` is told of each entry dropped for room (not of one deleted or replaced). */
  constructor(
    private readonly capacity: number,
    private readonly evicted: (key: K, value: V) => void = () => {},
  ) {}

  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined && key !== this.newest) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      this.newest = key;
    }
    return hit;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    this.newest = key;
    if (this.entries.size > this.capacity) {
      const [oldest, dropped] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      this.evicted(oldest, dropped);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
    if (key === this.newest) this.newest = undefined;
  }

  get size(): number {
    return this.entries.size;
  }
}
