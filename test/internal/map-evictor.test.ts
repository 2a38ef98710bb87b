import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/internal/fifo.js';
import { MapEvictor } from '../../src/internal/map-evictor.js';

describe('MapEvictor', () => {
  it('drops entries in insertion order, a re-set entry counting from its new place', () => {
    const map = new Map<string, number>([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
    const evictor = new MapEvictor(map);
    expect(evictor.dropOldest()).toBe('a');
    map.delete('b');
    map.set('b', 4); // moved to the back
    map.set('c', 5); // an update in place keeps its turn
    map.set('d', 6);
    expect([evictor.dropOldest(), evictor.dropOldest()]).toEqual(['c', 'b']);
    expect([...map.keys()]).toEqual(['d']);
  });

  it('keeps working after the map was emptied, cleared or drained', () => {
    const map = new Map<number, number>();
    const evictor = new MapEvictor(map);
    expect(evictor.dropOldest()).toBeUndefined();
    map.set(1, 1);
    expect(evictor.dropOldest()).toBe(1);
    expect(evictor.dropOldest()).toBeUndefined(); // its iterator has run out
    map.set(2, 2).set(3, 3);
    expect(evictor.dropOldest()).toBe(2);
    map.clear();
    map.set(4, 4);
    expect(evictor.dropOldest()).toBe(4);
    expect(map.size).toBe(0);
  });

  it('matches a plain map kept to a bound through random sets and deletes', () => {
    const map = new Map<number, number>();
    const evictor = new MapEvictor(map);
    const order: number[] = []; // the model: keys oldest first
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 20_000; i++) {
      const key = Math.floor(random() * 300);
      if (random() < 0.3) {
        map.delete(key);
        if (order.includes(key)) order.splice(order.indexOf(key), 1);
      } else {
        if (map.delete(key)) order.splice(order.indexOf(key), 1);
        map.set(key, i);
        order.push(key);
      }
      while (map.size > 100) expect(evictor.dropOldest()).toBe(order.shift());
    }
    expect([...map.keys()]).toEqual(order);
  });
});

describe('Fifo', () => {
  it('pushes at the back, shifts from the front, and drops stale items at the front', () => {
    const fifo = new Fifo<number>();
    expect(fifo.shift()).toBeUndefined();
    for (let i = 0; i < 5000; i++) fifo.push(i);
    for (let i = 0; i < 3000; i++) expect(fifo.shift()).toBe(i);
    expect(fifo.length).toBe(2000);
    expect(fifo.peek()).toBe(3000);
    expect(fifo.dropWhile((n) => n < 3010)).toBe(3010);
    expect([...fifo].slice(0, 2)).toEqual([3010, 3011]);
    while (fifo.length > 0) fifo.shift();
    expect(fifo.peek()).toBeUndefined();
    fifo.push(1);
    expect([...fifo]).toEqual([1]);
  });

  it('retains the items a test keeps, in order, from wherever its front is', () => {
    const fifo = new Fifo<number>();
    for (let i = 0; i < 10; i++) fifo.push(i);
    fifo.shift();
    fifo.retain((n) => n % 3 === 0);
    expect([...fifo]).toEqual([3, 6, 9]);
    expect(fifo.length).toBe(3);
    expect(fifo.shift()).toBe(3);
    fifo.push(12);
    expect([...fifo]).toEqual([6, 9, 12]);
  });
});
