/** Every comparison `npm run bench` knows, in the order BENCHMARKS.md lists them. */
import { authComparison } from './auth/comparison.js';
import { httpComparison } from './http/comparison.js';
import type { Comparison } from './lib/types.js';
import { oauthComparison } from './oauth/comparison.js';

export const comparisons: readonly Comparison[] = [httpComparison, authComparison, oauthComparison];
