import { describe, expect, it, vi } from 'vitest';
import { ChannelSet } from '../../../src/ws/channel/set.js';

describe('ChannelSet', () => {
  it('keeps one channel or many, each with its unsubscribe, and gives each back once', () => {
    const set = new ChannelSet();
    const offs = { a: vi.fn(), b: vi.fn(), c: vi.fn() };
    expect(set.has('a')).toBe(false);
    expect(set.names()).toEqual([]);
    set.add('a', offs.a);
    set.add('b', offs.b);
    set.add('c', undefined);
    expect(['a', 'b', 'c'].map((c) => set.has(c))).toEqual([true, true, true]);
    expect(set.get('b')).toBe(offs.b);
    expect(set.names().sort()).toEqual(['a', 'b', 'c']);
    expect(set.take('a')).toBe(offs.a);
    expect(set.take('a')).toBeUndefined();
    expect(set.has('a')).toBe(false);
    set.add('d', offs.c); // takes the freed first place
    expect(set.names().sort()).toEqual(['b', 'c', 'd']);
    expect(set.take('b')).toBe(offs.b);
    expect(set.take('c')).toBeUndefined(); // subscribed without a hub
    expect(set.names()).toEqual(['d']);
    expect(set.get('d')).toBe(offs.c);
  });
});
