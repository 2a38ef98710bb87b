/** Every comparison `npm run bench` knows, in the order BENCHMARKS.md lists them. */
import { authComparison } from './auth/comparison.js';
import { compressionComparison } from './compression/comparison.js';
import { httpComparison } from './http/comparison.js';
import { importComparison } from './import/comparison.js';
import type { ImportComparison } from './import/types.js';
import { jwtComparison } from './jwt/comparison.js';
import type { OpsComparison } from './jwt/types.js';
import type { Comparison } from './lib/types.js';
import { oauthComparison } from './oauth/comparison.js';
import { overloadComparison } from './overload/comparison.js';
import type { FanoutComparison } from './realtime/types.js';
import { redisFanoutComparison } from './redis-fanout/comparison.js';
import { redisRateLimitComparison } from './redis-rate-limit/comparison.js';
import { referenceComparison } from './reference/comparison.js';
import type { SenderComparison } from './senders/types.js';
import { sseComparison } from './sse/comparison.js';
import { webhookComparison } from './webhook/comparison.js';
import { wsComparison } from './ws/comparison.js';

export const comparisons: readonly (
  | Comparison
  | FanoutComparison
  | SenderComparison
  | OpsComparison
  | ImportComparison
)[] = [
  httpComparison,
  authComparison,
  referenceComparison,
  jwtComparison,
  oauthComparison,
  wsComparison,
  sseComparison,
  compressionComparison,
  overloadComparison,
  webhookComparison,
  redisRateLimitComparison,
  redisFanoutComparison,
  importComparison,
];
