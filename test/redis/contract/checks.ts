// The Redis store contract: every store's checks, run by stores.contract.test.ts against
// every target of targets.ts. A check is a plain function of a client factory and a prefix
// of its own (check.ts), driving a store through its public methods only.
import { apiKeyChecks } from './api-key.js';
import { brokerChecks } from './broker.js';
import type { CheckGroup } from './check.js';
import { clientChecks } from './client.js';
import { oauthChecks } from './oauth.js';
import { rateLimitChecks, replayChecks, sessionChecks } from './single-key.js';
import { spreadChecks } from './spread.js';
import { webhookChecks } from './webhook.js';

export type { Check, CheckContext, CheckGroup } from './check.js';

export const contract: readonly CheckGroup[] = [
  rateLimitChecks,
  sessionChecks,
  replayChecks,
  oauthChecks,
  apiKeyChecks,
  clientChecks,
  webhookChecks(1),
  webhookChecks(4),
  brokerChecks,
  spreadChecks,
];
