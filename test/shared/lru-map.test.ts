import { describe, expect, it } from 'vitest';
import { LruMap } from '../../shared/lru-map.js';

/** The least recently used entry is the one dropped for room, whatever the order of reads and writes. */
describe('LruMap', () => {
  const filled = (capacity: number, ...keys: string[]) => {
    const dropped: string[] = [];
    const m = new LruMap<string, number>(capacity, (k) => dropped.push(k));
    for (const [i, k] of keys.entries()) m.set(k, i);
    return { m, dropped };
  };

  it('a read marks its entry used: the other is dropped for room', () => {
    const { m, dropped } = filled(2, 'a', 'b');
    expect(m.get('a')).toBe(0);
    m.set('c', 2);
    expect(dropped).toEqual(['b']);
    expect([m.get('a'), m.get('b'), m.get('c')]).toEqual([0, undefined, 2]);
  });

  it('reads of the newest entry, again and again, leave the oldest the one dropped', () => {
    const { m, dropped } = filled(2, 'a', 'b');
    for (let i = 0; i < 5; i++) expect(m.get('b')).toBe(1);
    m.set('c', 2);
    expect(dropped).toEqual(['a']);
  });

  it('the newest deleted, then written again, is the newest again', () => {
    const { m, dropped } = filled(3, 'a', 'b', 'c');
    m.delete('c');
    expect(m.get('c')).toBeUndefined();
    m.get('a'); // b, a
    m.set('c', 9); // b, a, c
    m.get('c'); // the newest already
    m.set('d', 3); // drops b: a, c, d
    m.get('c'); // a, d, c
    m.set('e', 4); // drops a
    expect(dropped).toEqual(['b', 'a']);
    expect([m.get('c'), m.get('d'), m.get('e'), m.size]).toEqual([9, 3, 4, 3]);
  });

  it('a replaced entry is not told as dropped, and its new value is read', () => {
    const { m, dropped } = filled(2, 'a', 'b');
    m.set('a', 7);
    expect(dropped).toEqual([]);
    expect(m.get('a')).toBe(7);
    m.set('c', 2);
    expect(dropped).toEqual(['b']);
  });
});
