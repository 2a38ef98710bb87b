// The edges of the SSRF guard: its exact messages, what a resolver may answer, and the
// lookup and connector it hands undici, driven directly (the agent is built over a stand-in
// for the undici module, as the sender builds it over the real one). No DNS, no traffic.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  type AddressGuardOptions,
  assertWebhookUrl,
  type GuardedAgentOptions,
  guardedAgentWith,
  type ResolvedAddress,
} from '../../../src/webhook/address-guard/guard.js';
import { classifyAddress, isPublicAddress } from '../../../src/webhook/address-guard/ip-ranges.js';
import { WebhookAddressError } from '../../../src/webhook/errors.js';

/** A resolver answering from a table (a missing name is NXDOMAIN). */
const table =
  (answers: Record<string, readonly unknown[]>) =>
  async (hostname: string): Promise<readonly ResolvedAddress[]> => {
    const found = answers[hostname];
    if (found === undefined) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    return found.map((address) =>
      typeof address === 'string' ? { address, family: net.isIP(address) as 4 | 6 } : address,
    ) as ResolvedAddress[];
  };

async function refused(url: string | URL, options: AddressGuardOptions = {}) {
  const err = await assertWebhookUrl(url, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookAddressError);
  return err as WebhookAddressError;
}

async function optionError(options: object) {
  const err = await assertWebhookUrl('https://8.8.8.8/', options as never).catch((e) => e);
  expect(err).toBeInstanceOf(TypeError);
  return (err as Error).message;
}

describe('assertWebhookUrl: what the caller is told', () => {
  it('names itself and the option in option errors', async () => {
    expect(await optionError({ allowHttp: 1 })).toBe(
      'assertWebhookUrl(): `allowHttp` must be a boolean',
    );
    expect(await optionError({ allowPrivate: 'yes' })).toBe(
      'assertWebhookUrl(): `allowPrivate` must be a boolean',
    );
    expect(await optionError({ lookup: 'dns' })).toBe(
      'assertWebhookUrl(): `lookup` must be a function',
    );
    expect(await optionError({ zzz: 1 })).toBe('assertWebhookUrl(): unknown option `zzz`.');
    const url = await assertWebhookUrl(null as never).catch((e) => e);
    expect(url).toMatchObject({
      message: 'assertWebhookUrl(): `url` must be a string or a URL',
      code: 'ERR_INVALID_OPTION',
    });
  });

  it('says what is wrong with the URL', async () => {
    expect((await refused('/relative')).message).toBe('A webhook URL must be an absolute URL.');
    expect((await refused('ftp://8.8.8.8/')).message).toBe('A webhook URL must be https:.');
    expect((await refused('http://8.8.8.8/')).message).toBe(
      'A webhook URL must be https: (http: is not allowed).',
    );
    expect((await refused('https://u:p@8.8.8.8/')).message).toBe(
      'A webhook URL must not carry a user name or password.',
    );
    expect((await refused('https://0.0.0.0/')).message).toBe(
      'The webhook address 0.0.0.0 is an unspecified address.',
    );
    expect((await refused('https://[ff02::1]/')).message).toBe(
      'The webhook address ff02::1 is a multicast address.',
    );
  });

  it('says a name does not resolve, keeping the resolver’s error as the cause, and only it', async () => {
    const lookup = table({ 'empty.example': [], 'junk.example': ['nope'] });
    const gone = await refused('https://gone.example/', { lookup });
    expect(gone.message).toBe('The webhook host gone.example does not resolve.');
    expect(Object.getOwnPropertyDescriptor(gone, 'cause')).toMatchObject({
      value: expect.objectContaining({ code: 'ENOTFOUND' }),
      writable: true,
      configurable: true,
      enumerable: false,
    });
    const empty = await refused('https://empty.example/', { lookup });
    expect(empty.message).toBe('The webhook host empty.example does not resolve.');
    expect('cause' in empty).toBe(false);
    const junk = await refused('https://junk.example/', { lookup });
    expect(junk.message).toBe('The webhook host junk.example resolves to something not an IP.');
    expect('cause' in junk).toBe(false);
  });

  it('refuses a resolver that answers something that is not an array, or holes in one', async () => {
    for (const answer of [{ address: '8.8.8.8', family: 4 }, [null], [undefined], [{}]]) {
      const lookup = async () => answer as never;
      const err = await refused('https://odd.example/', { lookup });
      expect(err.reason, JSON.stringify(answer)).toBe('unresolvable');
    }
  });
});

describe('classifyAddress and isPublicAddress: only strings', () => {
  it('refuses an array whose text is an address', () => {
    const err = (() => {
      try {
        classifyAddress(['8.8.8.8'] as never);
      } catch (e) {
        return e as TypeError & { code?: string };
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(TypeError);
    expect(err?.message).toBe('classifyAddress: not an IP address literal');
    expect(err?.code).toBe('ERR_INVALID_ARG_VALUE');
    expect(isPublicAddress(['8.8.8.8'] as never)).toBe(false);
  });
});

/** A stand-in for the undici module: records what the agent is built with. */
function fakeUndici() {
  const built: { connector?: Record<string, unknown>; agent?: Record<string, unknown> } = {};
  const reached: unknown[] = [];
  const undici = {
    buildConnector: (options: Record<string, unknown>) => {
      built.connector = options;
      return (target: unknown, callback: (...args: unknown[]) => void) => {
        reached.push(target);
        callback(null, 'socket');
      };
    },
    Agent: class {
      constructor(options: Record<string, unknown>) {
        built.agent = options;
      }
    },
  };
  return { undici: undici as never, built, reached };
}

type Lookup = (
  hostname: string,
  options: { family?: unknown; all?: boolean },
  callback: (...args: unknown[]) => void,
) => void;

/** The guarded agent over the stand-in, its lookup and its connector. */
function guarded(options: GuardedAgentOptions = {}) {
  const fake = fakeUndici();
  guardedAgentWith(fake.undici, options);
  const lookup = fake.built.connector!.lookup as Lookup;
  const connect = fake.built.agent!.connect as (
    target: object,
    callback: (...args: unknown[]) => void,
  ) => void;
  const resolve = (hostname: string, opts: { family?: unknown; all?: boolean } = {}) =>
    new Promise<unknown[]>((done) => lookup(hostname, opts, (...args) => done(args)));
  const open = (target: object) =>
    new Promise<unknown[]>((done) => connect(target, (...args) => done(args)));
  return { ...fake, resolve, open };
}

describe('the guarded lookup node calls', () => {
  const lookup = table({
    'both.example': ['93.184.215.14', '2606:4700::1111', '8.8.8.8'],
    'v4.example': ['93.184.215.14'],
    'v6.example': ['2606:4700::1111'],
    'v6first.example': ['2606:4700::1111', '93.184.215.14'],
    'mixed.example': ['93.184.215.14', '10.0.0.1'],
  });

  it('gives the first answer of the family asked for, by name or by number', async () => {
    const { resolve } = guarded({ lookup });
    expect(await resolve('both.example', {})).toEqual([null, '93.184.215.14', 4]);
    expect(await resolve('both.example', { family: 0 })).toEqual([null, '93.184.215.14', 4]);
    expect(await resolve('both.example', { family: 4 })).toEqual([null, '93.184.215.14', 4]);
    expect(await resolve('both.example', { family: 'IPv4' })).toEqual([null, '93.184.215.14', 4]);
    expect(await resolve('both.example', { family: 6 })).toEqual([null, '2606:4700::1111', 6]);
    expect(await resolve('both.example', { family: 'IPv6' })).toEqual([null, '2606:4700::1111', 6]);
    expect(await resolve('v6.example', {})).toEqual([null, '2606:4700::1111', 6]);
    expect(await resolve('v6first.example', {})).toEqual([null, '2606:4700::1111', 6]);
    expect(await resolve('v6first.example', { family: 'IPv4' })).toEqual([
      null,
      '93.184.215.14',
      4,
    ]);
    expect(await resolve('v6first.example', { family: 4 })).toEqual([null, '93.184.215.14', 4]);
  });

  it('gives every answer of that family with all: true, as copies', async () => {
    const { resolve } = guarded({ lookup });
    expect(await resolve('both.example', { all: true })).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:4700::1111', family: 6 },
        { address: '8.8.8.8', family: 4 },
      ],
    ]);
    expect(await resolve('both.example', { all: true, family: 'IPv4' })).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '8.8.8.8', family: 4 },
      ],
    ]);
    expect(await resolve('both.example', { all: true, family: 6 })).toEqual([
      null,
      [{ address: '2606:4700::1111', family: 6 }],
    ]);
  });

  it('fails a name without an address of the family asked for as unresolvable', async () => {
    const { resolve } = guarded({ lookup });
    for (const [host, family, missing] of [
      ['v4.example', 'IPv6', 6],
      ['v4.example', 6, 6],
      ['v6.example', 4, 4],
    ] as const) {
      const [error, address, got] = await resolve(host, { family });
      expect(error).toBeInstanceOf(WebhookAddressError);
      expect(error).toMatchObject({
        reason: 'unresolvable',
        message: `The webhook host ${host} has no IPv${missing} address.`,
      });
      expect([address, got]).toEqual(['', 0]);
    }
  });

  it('fails a name with any private answer, and an unknown one, in node’s error form', async () => {
    const { resolve } = guarded({ lookup });
    const [private_, address, family] = await resolve('mixed.example', { all: true });
    expect(private_).toMatchObject({ reason: 'private' });
    expect([address, family]).toEqual(['', 0]);
    const [gone, ...rest] = await resolve('gone.example', {});
    expect(gone).toMatchObject({ reason: 'unresolvable' });
    expect(rest).toEqual(['', 0]);
  });

  it('answers an IP literal itself, unresolved, when allowed', async () => {
    const { resolve } = guarded({ allowPrivate: true, lookup: async () => [] });
    expect(await resolve('127.0.0.1', {})).toEqual([null, '127.0.0.1', 4]);
    expect(await resolve('::1', { all: true })).toEqual([null, [{ address: '::1', family: 6 }]]);
    const strict = guarded({ lookup: async () => [] });
    expect((await strict.resolve('127.0.0.1', {}))[0]).toMatchObject({ reason: 'private' });
  });
});

describe('the guarded connector', () => {
  it('refuses a scheme or an IP literal before connecting, asynchronously', async () => {
    const { open, reached } = guarded({ allowHttp: true, lookup: async () => [] });
    let sync = true;
    const pending = open({ protocol: 'http:', hostname: '[::1]' }).then((args) => {
      expect(sync).toBe(false);
      return args;
    });
    sync = false;
    const [error, socket] = await pending;
    expect(error).toMatchObject({ reason: 'private' });
    expect(socket).toBeNull();
    expect((await open({ protocol: 'ftp:', hostname: 'x.example' }))[0]).toMatchObject({
      reason: 'invalid-url',
    });
    expect(reached).toEqual([]);
    expect(await open({ protocol: 'https:', hostname: '8.8.8.8' })).toEqual([null, 'socket']);
    expect(await open({ protocol: 'http:', hostname: 'x.example' })).toEqual([null, 'socket']);
    expect(reached).toHaveLength(2);
    const https = guarded({ lookup: async () => [] });
    expect((await https.open({ protocol: 'http:', hostname: '8.8.8.8' }))[0]).toMatchObject({
      reason: 'insecure-scheme',
    });
  });

  it('builds undici’s agent with its defaults, or the options given', () => {
    const defaults = guarded();
    expect(defaults.built.connector).toMatchObject({ timeout: 10_000 });
    expect(defaults.built.agent).toMatchObject({ connections: 10, keepAliveTimeout: 4_000 });
    const given = guarded({ connections: 3, keepAliveTimeout: '1ms', connectTimeout: '1ms' });
    expect(given.built.connector).toMatchObject({ timeout: 1 });
    expect(given.built.agent).toMatchObject({ connections: 3, keepAliveTimeout: 1 });
  });

  it('names createGuardedAgent() and the option in its errors', () => {
    const message = (options: object) => {
      try {
        guardedAgentWith(fakeUndici().undici, options as never);
      } catch (err) {
        return (err as Error).message;
      }
      return undefined;
    };
    expect(message({ keepAliveTimeout: 0 })).toBe(
      'createGuardedAgent(): `keepAliveTimeout` must be milliseconds, at least 1',
    );
    expect(message({ connectTimeout: 0 })).toBe(
      'createGuardedAgent(): `connectTimeout` must be milliseconds, at least 1',
    );
    expect(message({ connections: 0 })).toBe(
      'createGuardedAgent(): `connections` must be an integer, at least 1',
    );
    expect(message({ allowHttp: 'no' })).toBe(
      'createGuardedAgent(): `allowHttp` must be a boolean',
    );
    expect(message({ conection: 1 })).toBe(
      'createGuardedAgent(): unknown option `conection`. Did you mean `connections`?',
    );
  });
});
