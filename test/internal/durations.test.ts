// Every duration of portico is in milliseconds (as in node:http, ws and undici): this suite
// reads every exported options interface of src/ and checks what its members' TSDoc says, and
// that each is typed `Duration` (a number of milliseconds, or a string with its unit).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

/** Names of members that hold a duration (or a list of them). */
const DURATION =
  /(?:ttl|timeout|interval|heartbeat|tolerance|maxage|window|schedule|cooldown|period|delay|overlap|ahead|retryafter|lifetime|age$|^retry$|ms$)/i;

/** Members the names above take for durations, but which are not. */
const NOT_DURATIONS = new Set(['auth/jwt/jwt.ts JwtVerifierOptions.claims']);

/**
 * Duration members still typed `number`: the settings of internal modules, which receive
 * milliseconds already checked by their public factory, and the JWT verifiers' options (their
 * `Duration` type comes with the multi-issuer work; the floors already apply to them).
 */
const NUMBER_TYPED = new Set([
  'auth/jwt/verify.ts CoreVerifyOptions.clockTolerance',
  'oauth/clients/assertion.ts ClientAssertionCheckOptions.clockTolerance',
  'webhook/delivery/deliverer.ts DelivererOptions.schedule',
  'webhook/delivery/loop.ts DeliveryLoopOptions.timeout',
  'webhook/delivery/loop.ts DeliveryLoopOptions.pollInterval',
  'webhook/endpoint-registry.ts EndpointRegistryOptions.rotationOverlapMs',
  'webhook/delivery/post.ts PostOptions.timeout',
  // jose's remote JWKS options, passed to jose as they are (numbers of milliseconds)
  'auth/jwt/jwks-remote.ts RemoteJwksOptions.cooldownDuration',
  'auth/jwt/jwks-remote.ts RemoteJwksOptions.cacheMaxAge',
  'auth/jwt/jwks-remote.ts RemoteJwksOptions.timeoutDuration',
]);

interface Member {
  where: string;
  name: string;
  type: string;
  doc: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The members of every exported interface named `…Options`, with their TSDoc. */
function optionMembers(): Member[] {
  const members: Member[] = [];
  for (const file of sourceFiles(src)) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    source.forEachChild((node) => {
      if (!ts.isInterfaceDeclaration(node) || !node.name.text.endsWith('Options')) return;
      if (!node.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return;
      for (const member of node.members) {
        if (!ts.isPropertySignature(member) || member.name === undefined) continue;
        const doc = ts
          .getJSDocCommentsAndTags(member)
          .map((d) => d.getText(source))
          .join('\n');
        members.push({
          where: `${file.slice(src.length)} ${node.name.text}.${member.name.getText(source)}`,
          name: member.name.getText(source),
          type: member.type?.getText(source) ?? '',
          doc,
        });
      }
    });
  }
  return members;
}

const members = optionMembers();
const numeric = (m: Member) => /\b(?:number|Duration)\b/.test(m.type);
const durations = members.filter(
  (m) => DURATION.test(m.name) && numeric(m) && !NOT_DURATIONS.has(m.where),
);

describe('durations', () => {
  it('finds the options of every factory', () => {
    expect(members.length).toBeGreaterThan(200);
    expect(members.filter((m) => DURATION.test(m.name) && numeric(m)).length).toBeGreaterThan(25);
  });

  it('documents no option in seconds', () => {
    const inSeconds = members.filter(
      (m) => numeric(m) && /\bseconds?\b/i.test(m.doc) && !/millisecond/i.test(m.doc),
    );
    expect(inSeconds.map((m) => m.where)).toEqual([]);
  });

  it('says "milliseconds" in the TSDoc of every duration option', () => {
    const unsaid = durations.filter((m) => !/millisecond/i.test(m.doc));
    expect(unsaid.map((m) => m.where)).toEqual([]);
  });

  it("types every duration option `Duration`, so that `5` and `'5s'` are both written on purpose", () => {
    const untyped = durations.filter(
      (m) => !/\bDuration\b/.test(m.type) && !NUMBER_TYPED.has(m.where),
    );
    expect(untyped.map((m) => m.where)).toEqual([]);
    // and the list of exceptions holds no stale entry
    const found = new Set(durations.map((m) => m.where));
    expect([...NUMBER_TYPED].filter((where) => !found.has(where))).toEqual([]);
  });
});
