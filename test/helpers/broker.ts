// A broker around a MemoryBroker with some methods replaced: slow, failing or lossy brokers
// for the realtime suites.
import type { Broker } from '../../src/realtime/broker.js';
import type { MemoryBroker } from '../../src/realtime/memory-broker.js';

/** `inner`'s methods, except those given in `overrides`. */
export function wrapBroker(inner: MemoryBroker, overrides: Partial<Broker>): Broker {
  return {
    publish: (channel, draft) => inner.publish(channel, draft),
    subscribe: (channel, listener) => inner.subscribe(channel, listener),
    history: (channel, since) => inner.history(channel, since),
    position: (channel) => inner.position(channel),
    close: () => inner.close(),
    ...overrides,
  };
}
