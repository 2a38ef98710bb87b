// No traffic leaves 127.0.0.0/8 here, and no real DNS: every host name goes through a stub.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import net from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuardedAgent } from '../../../src/webhook/address-guard/agent.js';
import {
  type AddressGuardOptions,
  assertWebhookUrl,
  type ResolvedAddress,
} from '../../../src/webhook/address-guard/guard.js';
import {
  type AddressClass,
  classifyAddress,
  isPublicAddress,
} from '../../../src/webhook/address-guard/ip-ranges.js';
import { WebhookAddressError } from '../../../src/webhook/errors.js';
import { closeAll, listen } from '../../helpers/http.js';

afterEach(closeAll);

const agents: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
});

/** A resolver that answers from a table and records what it was asked. */
function stub(table: Record<string, readonly string[] | (() => readonly string[])>) {
  const asked: string[] = [];
  const lookup = async (hostname: string): Promise<readonly ResolvedAddress[]> => {
    asked.push(hostname);
    const entry = table[hostname];
    const addresses = typeof entry === 'function' ? entry() : entry;
    if (addresses === undefined) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    return addresses.map((address) => ({ address, family: net.isIP(address) as 4 | 6 }));
  };
  return { lookup, asked };
}

/** A resolver that fails the test if called. */
const noDns = async (hostname: string): Promise<never> => {
  throw new Error(`unexpected lookup of ${hostname}`);
};

async function refusal(promise: Promise<unknown>): Promise<WebhookAddressError> {
  try {
    await promise;
  } catch (err) {
    // undici's request() rejects with the connector's error itself, not wrapped.
    expect(err).toBeInstanceOf(WebhookAddressError);
    expect((err as WebhookAddressError).code).toBe('ERR_WEBHOOK_ADDRESS');
    return err as WebhookAddressError;
  }
  throw new Error('expected a WebhookAddressError');
}

async function reason(url: string | URL, options: AddressGuardOptions = {}) {
  return (await refusal(assertWebhookUrl(url, { lookup: noDns, ...options }))).reason;
}

/** A local server on 127.0.0.1 that counts the requests it sees. */
async function counter(handler?: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: string[] = [];
  const server = await listen((req, res) => {
    seen.push(req.url ?? '');
    if (handler) handler(req, res);
    else res.end('ok');
  });
  return { ...server, seen };
}

function agent(options: Parameters<typeof createGuardedAgent>[0]) {
  const created = createGuardedAgent(options);
  agents.push(created);
  return created;
}

describe('classifyAddress', () => {
  const refused: [string, AddressClass][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%lo', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12::1', 'unique-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::FFFF:A9FE:A9FE', 'link-local'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['::8.8.8.8', 'reserved'],
    ['::ffff:0:8.8.8.8', 'reserved'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'link-local'],
    ['64:ff9b:1::a00:1', 'reserved'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'],
    ['2002:c0a8:101::1', 'private'],
    ['2001::1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['2001:2::1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['100::1', 'reserved'],
    ['5f00::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['1::', 'reserved'],
  ];
  it.each(refused)('%s is %s', (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
    expect(isPublicAddress(ip)).toBe(false);
  });

  const accepted = [
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '192.0.3.1',
    '198.20.0.1',
    '223.255.255.255',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ];
  it.each(accepted)('%s is public', (ip) => {
    expect(classifyAddress(ip)).toBe('public');
    expect(isPublicAddress(ip)).toBe(true);
  });

  it('throws a TypeError for anything that is not an IP literal', () => {
    for (const text of ['example.com', '127.1', '0x7f000001', '2130706433', '', '1.2.3.04']) {
      expect(() => classifyAddress(text)).toThrow(TypeError);
      expect(isPublicAddress(text)).toBe(false);
    }
    expect(() => classifyAddress(42 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    );
  });
});

describe('assertWebhookUrl', () => {
  it('returns the parsed URL of a public https destination', async () => {
    const url = await assertWebhookUrl('https://93.184.215.14/hooks?x=1', { lookup: noDns });
    expect(url).toBeInstanceOf(URL);
    expect(url.href).toBe('https://93.184.215.14/hooks?x=1');
    const ipv6 = await assertWebhookUrl(new URL('https://[2606:4700::1111]:8443/'), {
      lookup: noDns,
    });
    expect(ipv6.host).toBe('[2606:4700::1111]:8443');
  });

  it('returns a copy of a URL object, never the caller’s', async () => {
    const input = new URL('https://8.8.8.8/');
    const url = await assertWebhookUrl(input, { lookup: noDns });
    expect(url).not.toBe(input);
    expect(url.href).toBe(input.href);
  });

  it('requires https unless allowHttp', async () => {
    expect(await reason('http://8.8.8.8/')).toBe('insecure-scheme');
    expect(await reason('http://8.8.8.8/', { allowPrivate: true })).toBe('insecure-scheme');
    await expect(assertWebhookUrl('http://8.8.8.8/', { allowHttp: true })).resolves.toBeInstanceOf(
      URL,
    );
  });

  it('refuses relative URLs, other schemes and credentials', async () => {
    for (const url of [
      '/hooks',
      'hooks.example.com/in',
      '',
      'https://',
      'http://[::1',
      'https://a b/',
    ]) {
      expect(await reason(url), url).toBe('invalid-url');
    }
    for (const url of [
      'ftp://8.8.8.8/',
      'file:///etc/passwd',
      'ws://8.8.8.8/',
      'javascript:alert(1)',
    ]) {
      expect(await reason(url, { allowHttp: true }), url).toBe('invalid-url');
    }
    expect(await reason('https://user:pass@8.8.8.8/')).toBe('invalid-url');
    expect(await reason('https://user@8.8.8.8/')).toBe('invalid-url');
    expect(await reason('https://:pass@8.8.8.8/')).toBe('invalid-url');
  });

  it('sees through other IPv4 and IPv6 spellings (the URL parser normalizes them)', async () => {
    const spellings = [
      'http://0x7f000001/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://017700000001/',
      'http://0x7f.1/',
      'http://127.1/',
      'http://127.0.0.1./',
      'http://[::ffff:127.0.0.1]/',
      'http://[0:0:0:0:0:ffff:7f00:1]/',
      'http://[::127.0.0.1]/',
      'http://[::1]/',
      'http://0/',
      'http://0xa9fea9fe/',
      'http://2852039166/',
      'http://0251.0376.0251.0376/',
      'http://10.1/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[2002:7f00:1::]/',
    ];
    for (const url of spellings) {
      expect(net.isIP(new URL(url).hostname.replace(/^\[|\]$/g, '')), url).not.toBe(0);
      expect(await reason(url, { allowHttp: true }), url).toBe('private');
      expect(await reason(url.replace('http:', 'https:')), url).toBe('private');
    }
    expect(new URL('http://0x7f.1/').hostname).toBe('127.0.0.1');
    expect(new URL('http://2130706433/').hostname).toBe('127.0.0.1');
    expect(new URL('http://017700000001/').hostname).toBe('127.0.0.1');
  });

  it('says what kind of address, never the path, the query or the resolved address', async () => {
    const err = await refusal(
      assertWebhookUrl('https://evil.example/secret-path?token=abc', {
        lookup: stub({ 'evil.example': ['10.1.2.3'] }).lookup,
      }),
    );
    expect(err.message).toBe('The webhook host evil.example resolves to a private address.');
    const literal = await refusal(assertWebhookUrl('https://169.254.169.254/latest/meta-data/'));
    expect(literal.message).toBe('The webhook address 169.254.169.254 is a link-local address.');
  });

  describe('host names', () => {
    it('refuses a name that resolves to a private address', async () => {
      const { lookup, asked } = stub({ 'evil.example': ['10.0.0.1'] });
      const err = await refusal(assertWebhookUrl('https://evil.example/in', { lookup }));
      expect(err.reason).toBe('private');
      expect(asked).toEqual(['evil.example']);
    });

    it('refuses a name when ANY of its addresses is not public', async () => {
      for (const addresses of [
        ['93.184.215.14', '10.0.0.1'],
        ['2606:4700::1111', '::1'],
        ['8.8.8.8', '::ffff:169.254.169.254'],
        ['fd00::1', '8.8.8.8'],
      ]) {
        const { lookup } = stub({ 'mixed.example': addresses });
        expect(await reason('https://mixed.example/', { lookup }), addresses.join()).toBe(
          'private',
        );
      }
    });

    it('accepts a name whose addresses are all public', async () => {
      const { lookup, asked } = stub({ 'hooks.example': ['93.184.215.14', '2606:4700::1111'] });
      const url = await assertWebhookUrl('https://Hooks.Example:8443/in', { lookup });
      expect(url.href).toBe('https://hooks.example:8443/in');
      expect(asked).toEqual(['hooks.example']);
    });

    it('refuses an unresolvable name (NXDOMAIN, no answer, not an IP), keeping the cause', async () => {
      const { lookup } = stub({ 'empty.example': [], 'junk.example': ['not-an-ip'] });
      const err = await refusal(assertWebhookUrl('https://nowhere.example/', { lookup }));
      expect(err.reason).toBe('unresolvable');
      expect((err.cause as { code?: string }).code).toBe('ENOTFOUND');
      expect(await reason('https://empty.example/', { lookup })).toBe('unresolvable');
      expect(await reason('https://junk.example/', { lookup })).toBe('unresolvable');
      expect(await reason('https://junk.example/', { lookup, allowPrivate: true })).toBe(
        'unresolvable',
      );
    });

    it('does not resolve IP literals', async () => {
      await expect(assertWebhookUrl('https://8.8.8.8/', { lookup: noDns })).resolves.toBeTruthy();
    });

    it('accepts anything with allowPrivate (local development)', async () => {
      const { lookup } = stub({ 'localhost.example': ['127.0.0.1', '::1'] });
      for (const url of ['http://127.0.0.1:3000/', 'http://[::1]/', 'http://localhost.example/']) {
        await expect(
          assertWebhookUrl(url, { lookup, allowHttp: true, allowPrivate: true }),
        ).resolves.toBeInstanceOf(URL);
      }
    });
  });

  it('validates its options', async () => {
    await expect(
      assertWebhookUrl('https://8.8.8.8/', { allowPrivat: true } as never),
    ).rejects.toThrow(/unknown option `allowPrivat`. Did you mean `allowPrivate`\?/);
    await expect(
      assertWebhookUrl('https://8.8.8.8/', { allowHttp: 'yes' } as never),
    ).rejects.toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION' }));
    await expect(assertWebhookUrl('https://8.8.8.8/', { lookup: 'dns' } as never)).rejects.toThrow(
      TypeError,
    );
    await expect(assertWebhookUrl(42 as never)).rejects.toThrow(TypeError);
  });
});

describe('createGuardedAgent', () => {
  it('refuses at connect time a name that resolves to loopback: nothing reaches the server', async () => {
    const server = await counter();
    const { lookup, asked } = stub({ 'rebind.example': ['127.0.0.1'] });
    const dispatcher = agent({ allowHttp: true, lookup });
    const err = await refusal(request(`http://rebind.example:${server.port}/`, { dispatcher }));
    expect(err.reason).toBe('private');
    expect(err.message).toBe('The webhook host rebind.example resolves to a loopback address.');
    expect(asked).toEqual(['rebind.example']);
    expect(server.seen).toEqual([]);
  });

  it('connects to the address the lookup returned (allowPrivate)', async () => {
    const server = await counter((req, res) => res.end(`host=${req.headers.host}`));
    const { lookup, asked } = stub({ 'rebind.example': ['127.0.0.1'] });
    const dispatcher = agent({ allowHttp: true, allowPrivate: true, lookup });
    const res = await request(`http://rebind.example:${server.port}/in`, { dispatcher });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe(`host=rebind.example:${server.port}`);
    expect(server.seen).toEqual(['/in']);
    expect(asked).toEqual(['rebind.example']);
  });

  it('hands node every checked address in both lookup forms (autoSelectFamily on and off)', async () => {
    const server = await counter();
    const before = net.getDefaultAutoSelectFamily();
    try {
      for (const autoSelect of [true, false]) {
        net.setDefaultAutoSelectFamily(autoSelect);
        const { lookup } = stub({ 'two.example': ['127.0.0.1', '127.0.0.2'] });
        const open = agent({ allowHttp: true, allowPrivate: true, lookup });
        const res = await request(`http://two.example:${server.port}/${autoSelect}`, {
          dispatcher: open,
        });
        expect(res.statusCode).toBe(200);
        await res.body.dump();
        const guarded = agent({ allowHttp: true, lookup });
        expect(
          (await refusal(request(`http://two.example:${server.port}/`, { dispatcher: guarded })))
            .reason,
        ).toBe('private');
      }
    } finally {
      net.setDefaultAutoSelectFamily(before);
    }
    expect(server.seen).toEqual(['/true', '/false']);
  });

  it('refuses a name with one public and one private answer before connecting anywhere', async () => {
    const server = await counter();
    const { lookup } = stub({ 'mixed.example': ['93.184.215.14', '127.0.0.1'] });
    const dispatcher = agent({ allowHttp: true, lookup });
    const err = await refusal(request(`http://mixed.example:${server.port}/`, { dispatcher }));
    expect(err.reason).toBe('private');
    expect(server.seen).toEqual([]);
  });

  it('refuses an IP literal at connect time (net.connect calls no lookup for it)', async () => {
    const server = await counter();
    const dispatcher = agent({ allowHttp: true, lookup: noDns });
    for (const url of [
      `http://127.0.0.1:${server.port}/`,
      `http://[::1]:${server.port}/`,
      `http://2130706433:${server.port}/`,
    ]) {
      const err = await refusal(request(url, { dispatcher }));
      expect(err.reason, url).toBe('private');
    }
    expect(server.seen).toEqual([]);
    const open = agent({ allowHttp: true, allowPrivate: true, lookup: noDns });
    const res = await request(`http://127.0.0.1:${server.port}/ok`, { dispatcher: open });
    await res.body.dump();
    expect(server.seen).toEqual(['/ok']);
  });

  it('requires https by default, at connect time too', async () => {
    const server = await counter();
    const { lookup } = stub({ 'rebind.example': ['127.0.0.1'] });
    for (const options of [{}, { allowPrivate: true }]) {
      const dispatcher = agent({ ...options, lookup });
      const err = await refusal(request(`http://rebind.example:${server.port}/`, { dispatcher }));
      expect(err.reason).toBe('insecure-scheme');
    }
    expect(server.seen).toEqual([]);
  });

  it('an unresolvable name fails the delivery as unresolvable', async () => {
    const dispatcher = agent({ lookup: stub({}).lookup });
    const err = await refusal(request('https://gone.example/', { dispatcher }));
    expect(err.reason).toBe('unresolvable');
  });

  it('DNS rebinding: a public answer at registration, loopback at delivery, is refused', async () => {
    const server = await counter();
    const answers = [['93.184.215.14'], ['127.0.0.1']];
    const { lookup, asked } = stub({ 'rebind.example': () => answers.shift() ?? ['127.0.0.1'] });
    const url = await assertWebhookUrl(`http://rebind.example:${server.port}/in`, {
      allowHttp: true,
      lookup,
    });
    expect(url.hostname).toBe('rebind.example');
    const dispatcher = agent({ allowHttp: true, lookup });
    const err = await refusal(request(url, { dispatcher }));
    expect(err.reason).toBe('private');
    expect(asked).toEqual(['rebind.example', 'rebind.example']);
    expect(server.seen).toEqual([]);
  });

  it('does not follow a redirect to a private address: the 302 is the answer', async () => {
    const server = await counter((_req, res) => {
      res.writeHead(302, { Location: `http://internal.example:${server.port}/secret` }).end();
    });
    const { lookup, asked } = stub({
      'hooks.example': ['127.0.0.1'],
      'internal.example': ['127.0.0.1'],
    });
    const dispatcher = agent({ allowHttp: true, allowPrivate: true, lookup });
    const res = await request(`http://hooks.example:${server.port}/in`, {
      method: 'POST',
      body: '{}',
      dispatcher,
    });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`http://internal.example:${server.port}/secret`);
    await res.body.dump();
    expect(server.seen).toEqual(['/in']);
    expect(asked).toEqual(['hooks.example']);
  });

  it('keeps the host name for TLS: SNI and the certificate check', async () => {
    const dir = new URL('../../fixtures/tls/', import.meta.url);
    const names: string[] = [];
    const tlsServer = createHttpsServer(
      {
        key: readFileSync(new URL('server.key', dir)),
        cert: readFileSync(new URL('server.pem', dir)),
        SNICallback: (name, callback) => {
          names.push(name);
          callback(null, undefined);
        },
      },
      (_req, res) => res.end('ok'),
    );
    tlsServer.on('tlsClientError', () => {});
    const server = await listen(tlsServer);
    const { lookup } = stub({ 'hooks.example': ['127.0.0.1'] });
    const dispatcher = agent({ allowPrivate: true, lookup });
    // The test CA is not trusted, and the certificate is for localhost: the check still runs.
    await expect(request(`https://hooks.example:${server.port}/`, { dispatcher })).rejects.toThrow(
      expect.objectContaining({ code: expect.stringMatching(/CERT|SIGNATURE|ISSUER/) }),
    );
    expect(names).toEqual(['hooks.example']);
  });

  it('validates its options', () => {
    expect(() => createGuardedAgent({ connection: 5 } as never)).toThrow(
      /Did you mean `connections`\?/,
    );
    for (const options of [
      { connections: 0 },
      { connections: 1.5 },
      { keepAliveTimeout: -1 },
      { connectTimeout: Number.NaN },
      { allowPrivate: 1 },
    ]) {
      expect(() => createGuardedAgent(options as never), JSON.stringify(options)).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_OPTION' }),
      );
    }
  });
});
