/**
 * portico `cache: false` against jose `jwtVerify` with the key imported once, verifying
 * alternately in one process: the same key, tokens, JIT and threadpool for both, so what the
 * `jwt` comparison's rounds add between processes cancels out. Not part of `npm run bench`: a
 * tool for the `cache: false` target, run after `npm run build` (it loads portico's build).
 *
 *   node --import tsx bench/jwt/interleaved.ts
 *
 * Per algorithm (the comparison's keys and 1,000 tokens, round-robin): 12 blocks of 800
 * verifications each way, alternating; prints the median CPU time per verification (user +
 * system, every thread: WebCrypto verifies in the threadpool) and jose's ÷ portico's.
 */
import { jwtVerify } from 'jose';
import {
  ALGORITHMS,
  type AlgorithmInputs,
  AUDIENCE,
  ISSUER,
  importedVerificationKey,
  jwtFixture,
} from './fixture.js';

type Verify = (token: string) => Promise<unknown>;

const BLOCKS = 12;
const PER_BLOCK = 800;
const WARMUP = 2000;

const dist = new URL('../../dist/auth.js', import.meta.url).href;
const { createJwtVerifier } = (await import(dist)) as typeof import('../../src/auth/index.js');

async function joseImported(inputs: AlgorithmInputs): Promise<Verify> {
  const key = await importedVerificationKey(inputs);
  const options = { algorithms: [inputs.alg], issuer: ISSUER, audience: AUDIENCE };
  return (token) => jwtVerify(token, key, options);
}

function porticoNoCache({ alg, publicKeyPem, secret }: AlgorithmInputs): Verify {
  const verifier = createJwtVerifier({
    ...(secret === undefined ? { publicKey: publicKeyPem! } : { secret }),
    issuer: ISSUER,
    audience: AUDIENCE,
    algorithms: [alg],
    cache: false,
  });
  return (token) => verifier.verify(token);
}

/** CPU µs per verification over `count` of `tokens`, one at a time. */
async function cpuPerVerification(verify: Verify, tokens: readonly string[], count: number) {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) await verify(tokens[i % tokens.length]!);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;

const inputs = await jwtFixture();
for (const alg of ALGORITHMS) {
  const { tokens } = inputs[alg];
  const jose = await joseImported(inputs[alg]);
  const portico = porticoNoCache(inputs[alg]);
  await cpuPerVerification(jose, tokens, WARMUP);
  await cpuPerVerification(portico, tokens, WARMUP);
  const joseUs: number[] = [];
  const porticoUs: number[] = [];
  for (let block = 0; block < BLOCKS; block++) {
    joseUs.push(await cpuPerVerification(jose, tokens, PER_BLOCK));
    porticoUs.push(await cpuPerVerification(portico, tokens, PER_BLOCK));
  }
  const a = median(joseUs);
  const b = median(porticoUs);
  console.log(
    `${alg}: jose (CryptoKey) ${a.toFixed(1)} µs, portico cache: false ${b.toFixed(1)} µs, ` +
      `jose ÷ portico ${(a / b).toFixed(3)}`,
  );
}
