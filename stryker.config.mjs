// StrykerJS over portico's security core, one folder per run (MUTATION_FOLDER, set by
// scripts/mutation.ts: `npm run test:mutation [-- folder…]`). Incremental: a run re-tests only
// the mutants whose code or covering tests changed since mutation/<folder>.incremental.json.
// Not part of `npm test`: a whole run takes hours on 2 cores.

/** The files mutated per folder: the security core (issue 25). */
export const FOLDERS = {
  cors: ['src/cors/**/*.ts'],
  'rate-limit': ['src/rate-limit/**/*.ts'],
  webhook: [
    'src/webhook/{signature,secret,address-guard,ip-ranges,guarded-agent,receiver}.ts',
    'src/webhook/{sender,sender-options,deliverer,delivery-loop,attempt,post,schedule}.ts',
  ],
  session: ['src/auth/{session,session-options,session-store,csrf}*.ts'],
  'auth-tokens': ['src/auth/{jwt,jwks,dpop,oidc,discovery,scopes}*.ts'],
  auth: [
    'src/auth/**/*.ts',
    '!src/auth/{session,session-options,session-store,csrf}*.ts',
    '!src/auth/{jwt,jwks,dpop,oidc,discovery,scopes}*.ts',
  ],
  // src/oauth in three parts, so that each run stays under ~40 minutes on two cores (a run
  // cut short saves nothing)
  'oauth-clients': [
    'src/oauth/{client-auth,client-assertion,clients,endpoint-proof,key-set,jwks-endpoint}.ts',
    'src/oauth/{metadata,form,scope,pkce}.ts',
  ],
  'oauth-grants': [
    'src/oauth/{authorize,authorize-answers,authorize-request,par,pages,page-messages}.ts',
    'src/oauth/{device,device-verify,device-verify-pages,user-code,user-code-attempts}.ts',
    'src/oauth/sign-in-form.ts',
  ],
  'oauth-tokens': [
    'src/oauth/{tokens,own-tokens,token-endpoint,form-token,introspect,revoke,revocation}.ts',
    'src/oauth/{userinfo,store,context,server,errors}.ts',
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
