// Every Redis store and the broker, through their public methods, against every target of
// targets.ts (a client library on one node or on a cluster): one contract, the same exact
// expectations everywhere. Each target is started once; each check has a prefix of its own.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { hasRedis } from '../../helpers/redis.js';
import { type CheckContext, contract } from './checks.js';
import { type RunningTarget, targets } from './targets.js';

describe.skipIf(!hasRedis)('Redis store contract', () => {
  describe.each(targets)('$name', (target) => {
    let running: RunningTarget | undefined;
    let checks = 0;

    beforeAll(async () => {
      running = await target.start();
    }, 40_000);
    afterAll(async () => {
      await running?.stop();
    });

    /** What one check is given: the target's clients and a prefix no other check has. */
    function context(): CheckContext {
      const on = running;
      if (on === undefined) throw new Error(`${target.name} did not start`);
      return {
        client: () => on.client(),
        prefix: `contract${++checks}:`,
        cluster: target.cluster,
        primaryOf: on.primaryOf === undefined ? undefined : (key) => on.primaryOf!(key),
      };
    }

    for (const group of contract) {
      // the checks of a cluster's key spread exist only for cluster targets (no skips)
      const checks = group.checks.filter((c) => target.cluster || !c.clusterOnly);
      if (checks.length === 0) continue;
      describe(group.store, () => {
        for (const check of checks) {
          it(check.name, () => check.run(context()), check.timeoutMs);
        }
      });
    }
  });
});
