/**
 * One verifier of the `jwt` comparison, in a process of its own:
 * `node --import tsx bench/jwt/verifier.ts <RS256|ES256|HS256> <variant>`, run by the
 * orchestrator with an IPC channel. It is sent its algorithm's keys and tokens
 * (`fixture.ts`), checks that the verifier accepts the token and refuses a forged one and
 * one for another audience (twice each, so a cached verifier is checked on its cache path
 * too), warms up, reports `ready`, then runs each workload it is told to for a bounded time:
 * verifications one at a time, each awaited, in a tight loop.
 */
import { createPublicKey } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createVerifier } from 'fast-jwt';
import { jwtVerify } from 'jose';
import {
  ALGORITHMS,
  type Algorithm,
  type AlgorithmInputs,
  AUDIENCE,
  ISSUER,
  importedVerificationKey,
  subjectOf,
} from './fixture.js';
import type { OpsCommand, OpsReport } from './types.js';

type Verify = (token: string) => unknown;

/** Each variant: how it verifies, and where its answer keeps the claims (for the checks). */
const VARIANTS: Record<
  string,
  { make(inputs: AlgorithmInputs): Promise<Verify>; claims(answer: unknown): unknown }
> = {
  jose: {
    async make({ alg, publicKeyPem, secret }) {
      const key =
        secret === undefined ? createPublicKey(publicKeyPem!) : new TextEncoder().encode(secret);
      const options = { algorithms: [alg], issuer: ISSUER, audience: AUDIENCE };
      return (token) => jwtVerify(token, key, options);
    },
    claims: (answer) => (answer as { payload: unknown }).payload,
  },
  'jose-imported': {
    async make(inputs) {
      const key = await importedVerificationKey(inputs);
      const options = { algorithms: [inputs.alg], issuer: ISSUER, audience: AUDIENCE };
      return (token) => jwtVerify(token, key, options);
    },
    claims: (answer) => (answer as { payload: unknown }).payload,
  },
  'fast-jwt': {
    make: async (inputs) => fastJwt(inputs, true),
    claims: (answer) => answer,
  },
  'fast-jwt-nocache': {
    make: async (inputs) => fastJwt(inputs, false),
    claims: (answer) => answer,
  },
  portico: {
    make: (inputs) => portico(inputs, true),
    claims: (answer) => (answer as { payload: unknown }).payload,
  },
  'portico-nocache': {
    make: (inputs) => portico(inputs, false),
    claims: (answer) => (answer as { payload: unknown }).payload,
  },
};

/** fast-jwt's verifier; `cache: true` is its default size (1,000 tokens, LRU). */
function fastJwt({ alg, publicKeyPem, secret }: AlgorithmInputs, cache: boolean): Verify {
  return createVerifier({
    key: publicKeyPem ?? secret!,
    algorithms: [alg],
    allowedIss: ISSUER,
    allowedAud: AUDIENCE,
    cache,
  });
}

/** portico's verifier, from its build (`npm run bench` builds it first). */
async function portico({ alg, publicKeyPem, secret }: AlgorithmInputs, cache: boolean) {
  const dist = new URL('../../dist/auth.js', import.meta.url).href;
  const { createJwtVerifier } = (await import(dist)) as typeof import('../../src/auth/index.js');
  const verifier = createJwtVerifier({
    ...(secret === undefined ? { publicKey: publicKeyPem! } : { secret }),
    issuer: ISSUER,
    audience: AUDIENCE,
    algorithms: [alg],
    ...(!cache && { cache: false as const }),
  });
  return (token: string) => verifier.verify(token);
}

const report = (message: OpsReport) => process.send?.(message);

function fail(error: unknown): void {
  report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  setTimeout(() => process.exit(1), 100);
}

/** Runs `verify` over `tokens` round-robin for `ms` and at least `minOps` verifications. */
async function timed(verify: Verify, tokens: readonly string[], ms: number, minOps = 0) {
  const n = tokens.length;
  let i = 0;
  let ops = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const end = start + ms;
  let now = start;
  do {
    for (let k = 0; k < 16; k++) {
      await verify(tokens[i]!);
      i = i + 1 === n ? 0 : i + 1;
    }
    ops += 16;
    now = performance.now();
  } while (now < end || ops < minOps);
  const used = process.cpuUsage(cpu);
  return { ops, seconds: (now - start) / 1000, cpuUs: used.user + used.system };
}

/** The problems found checking what `verify` accepts and refuses (nothing: all is well). */
async function check(
  verify: Verify,
  claimsOf: (answer: unknown) => unknown,
  inputs: AlgorithmInputs,
): Promise<string[]> {
  const problems: string[] = [];
  const accepts = async (token: string, sub: string, what: string) => {
    try {
      const claims = claimsOf(await verify(token)) as Record<string, unknown> | undefined;
      if (claims?.sub !== sub || claims.iss !== ISSUER || claims.aud !== AUDIENCE) {
        problems.push(`${what}: accepted with claims ${JSON.stringify(claims)}`);
      }
    } catch (error) {
      problems.push(`${what}: refused (${error instanceof Error ? error.message : error})`);
    }
  };
  const refuses = async (token: string, what: string) => {
    try {
      await verify(token);
      problems.push(`${what}: accepted`);
    } catch {
      // as it should
    }
  };
  // Twice each: the second time, a cached verifier answers from its cache.
  for (const time of ['', ' again']) {
    await accepts(inputs.tokens[0]!, subjectOf(0), `the token${time}`);
    await refuses(inputs.forged, `the token signed by another key${time}`);
    await refuses(inputs.wrongAudience, `a token for another audience${time}`);
  }
  const last = inputs.tokens.length - 1;
  await accepts(inputs.tokens[last]!, subjectOf(last), `token ${last}`);
  return problems;
}

async function main(): Promise<void> {
  if (process.send === undefined) throw new Error('a verifier runs under the bench orchestrator');
  const [alg, variant] = process.argv.slice(2) as [Algorithm, string];
  const spec = VARIANTS[variant];
  if (!ALGORITHMS.includes(alg) || spec === undefined) {
    throw new Error(
      `usage: verifier.ts <${ALGORITHMS.join('|')}> <${Object.keys(VARIANTS).join('|')}>`,
    );
  }
  // The orchestrator gone (IPC closed): nothing left to measure for.
  process.on('disconnect', () => process.exit(0));
  let verify: Verify | undefined;
  let workloads: Record<string, readonly string[]> = {};
  let busy = false;
  process.on('message', (command: OpsCommand) => {
    if (command.type === 'exit') process.exit(0);
    if (busy) return fail(new Error('a run is already going'));
    busy = true;
    const done = () => {
      busy = false;
    };
    if (command.type === 'setup') {
      const inputs = command.inputs as AlgorithmInputs;
      if (inputs.alg !== alg) return fail(new Error(`sent ${inputs.alg} inputs, not ${alg}`));
      workloads = { same: [inputs.tokens[0]!], distinct: inputs.tokens };
      (async () => {
        const made = await spec.make(inputs);
        const problems = await check(made, spec.claims, inputs);
        if (problems.length > 0) {
          throw new Error(
            `${alg} ${variant} does not verify as expected:\n  - ${problems.join('\n  - ')}`,
          );
        }
        verify = made;
        // The round-robin pass first (filling a cache with every token), then the one token.
        const warmup: Record<string, number> = {};
        for (const [name, tokens] of [
          ['distinct', workloads.distinct!],
          ['same', workloads.same!],
        ] as const) {
          const run = await timed(made, tokens, command.warmupMs, tokens.length);
          warmup[name] = run.ops / run.seconds;
        }
        report({
          type: 'ready',
          checks: [
            'accepts the token (twice), with its sub, iss and aud',
            'refuses it signed by another key (twice)',
            'refuses a token for another audience (twice)',
            `accepts token ${inputs.tokens.length - 1}`,
          ],
          warmup,
        });
      })().then(done, fail);
      return;
    }
    const tokens = workloads[command.workload];
    if (verify === undefined || tokens === undefined) {
      return fail(new Error(`cannot run ${command.workload} before setup`));
    }
    timed(verify, tokens, command.durationMs).then(({ ops, seconds, cpuUs }) => {
      report({
        type: 'done',
        workload: command.workload,
        round: command.round,
        ops,
        seconds,
        cpuUs,
      });
      done();
    }, fail);
  });
  report({ type: 'started' });
}

main().catch(fail);
