// StrykerJS over portico's security core, one folder per run (MUTATION_FOLDER, set by
// scripts/mutation.ts: `npm run test:mutation [-- folder…]`). Incremental: a run re-tests only
// the mutants whose code or covering tests changed since mutation/<folder>.incremental.json.
// Not part of `npm test`: a whole run takes hours on 2 cores.

/** The files mutated per folder: the security core (issue 25). */
export const FOLDERS = {
  cors: ['src/cors/**/*.ts'],
  'rate-limit': ['src/rate-limit/**/*.ts'],
  webhook: [
    'src/webhook/{signature,secret,receiver,sender,sender-options}.ts',
    'src/webhook/address-guard/*.ts',
    'src/webhook/delivery/{deliverer,loop,attempt,post,schedule}.ts',
  ],
  session: ['src/auth/session/*.ts'],
  'auth-tokens': ['src/auth/{jwt,dpop}/*.ts', 'src/auth/{oidc,scopes}.ts'],
  auth: [
    'src/auth/**/*.ts',
    '!src/auth/session/*.ts',
    '!src/auth/{jwt,dpop}/*.ts',
    '!src/auth/{oidc,scopes}.ts',
  ],
  // src/oauth in six parts, so that each run stays under ~45 minutes alone on two cores (a run
  // cut short saves nothing)
  'oauth-clients': ['src/oauth/clients/*.ts'],
  'oauth-protocol': [
    'src/oauth/protocol/*.ts',
    'src/oauth/shared/endpoint-proof.ts',
    'src/oauth/tokens/key-set.ts',
    'src/oauth/endpoints/{jwks,metadata,registration}.ts',
    'src/oauth/features.ts',
  ],
  'oauth-authorize': [
    'src/oauth/authorize/*.ts',
    'src/oauth/endpoints/{authorize,par,end-session}.ts',
    'src/oauth/consents.ts',
  ],
  'oauth-pages': [
    'src/oauth/pages/*.ts',
    'src/oauth/user-codes/*.ts',
    'src/oauth/endpoints/{device-authorization,device-verify}.ts',
  ],
  'oauth-tokens': [
    'src/oauth/tokens/{issue,verify,revoke-grant,context}.ts',
    'src/oauth/endpoints/{token,introspection,revocation,userinfo}.ts',
    'src/oauth/shared/{endpoint,token-request}.ts',
    'src/oauth/resources.ts',
  ],
  'oauth-grants': [
    'src/oauth/grants/*.ts',
    'src/oauth/store/*.ts',
    'src/oauth/{context,server}.ts',
  ],
};

const folder = process.env.MUTATION_FOLDER ?? 'cors';
const mutate = FOLDERS[folder];
if (mutate === undefined)
  throw new Error(`MUTATION_FOLDER=${folder}: one of ${Object.keys(FOLDERS)}`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  // every suite of vitest.mutation.config.ts runs in the dry run (perTest coverage then
  // picks, per mutant, the tests that reach it)
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  mutate: [...mutate, '!src/**/index.ts'],
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: `mutation/${folder}.incremental.json`,
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 10_000,
  // the incremental file is the full report too (scripts/mutation-summary.ts reads it)
  reporters: ['progress'],
  tempDirName: 'node_modules/.stryker-tmp',
  cleanTempDir: 'always',
};
