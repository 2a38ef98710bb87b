import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { sendJson } from '../../src/core/send.js';
import { createProxyTrust, normalizeIp, type TrustProxy } from '../../src/http/proxy.js';
import { json, request, serve } from '../helpers/http.js';

interface FakeRequest {
  peer?: string;
  xff?: string | string[];
  proto?: string;
  tls?: boolean;
}

function fakeRequest({ peer = '127.0.0.1', xff, proto, tls = false }: FakeRequest) {
  const headers: Record<string, string | string[]> = {};
  if (xff !== undefined) headers['x-forwarded-for'] = xff;
  if (proto !== undefined) headers['x-forwarded-proto'] = proto;
  return { headers, socket: { remoteAddress: peer, encrypted: tls } } as unknown as IncomingMessage;
}

const clientIp = (setting: TrustProxy, req: FakeRequest) =>
  createProxyTrust(setting).clientIp(fakeRequest(req));

describe('normalizeIp', () => {
  it('unwraps IPv4-mapped IPv6 addresses', () => {
    expect(normalizeIp('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeIp('::FFFF:10.0.0.1')).toBe('10.0.0.1');
  });

  it('strips brackets, ports, zone ids and spaces', () => {
    expect(normalizeIp('[::1]:8080')).toBe('::1');
    expect(normalizeIp('[2001:db8::1]')).toBe('2001:db8::1');
    expect(normalizeIp('203.0.113.7:5678')).toBe('203.0.113.7');
    expect(normalizeIp(' 203.0.113.7 ')).toBe('203.0.113.7');
    expect(normalizeIp('fe80::1%eth0')).toBe('fe80::1');
  });

  it('leaves plain addresses alone', () => {
    expect(normalizeIp('::1')).toBe('::1');
    expect(normalizeIp('2001:db8::ffff:1.2.3.4')).toBe('2001:db8::ffff:1.2.3.4');
    expect(normalizeIp('198.51.100.1')).toBe('198.51.100.1');
  });
});

describe('createProxyTrust(false)', () => {
  it('takes the socket peer and ignores X-Forwarded-For', () => {
    const trust = createProxyTrust(false);
    expect(trust.trustsProxies).toBe(false);
    expect(trust.clientIp(fakeRequest({ peer: '::ffff:192.0.2.1', xff: '6.6.6.6' }))).toBe(
      '192.0.2.1',
    );
  });

  it('treats 0 hops and the default as false', () => {
    expect(createProxyTrust(0).trustsProxies).toBe(false);
    expect(createProxyTrust().trustsProxies).toBe(false);
    expect(clientIp(0, { peer: '192.0.2.1', xff: '6.6.6.6' })).toBe('192.0.2.1');
  });

  it('believes only its own TLS, never X-Forwarded-Proto', () => {
    const trust = createProxyTrust(false);
    expect(trust.isSecure(fakeRequest({ proto: 'https' }))).toBe(false);
    expect(trust.isSecure(fakeRequest({ tls: true }))).toBe(true);
  });
});

describe('createProxyTrust(hops)', () => {
  it('takes the n-th address from the right, never the spoofable leftmost', () => {
    expect(clientIp(1, { xff: '6.6.6.6, 203.0.113.9' })).toBe('203.0.113.9');
    expect(clientIp(2, { xff: '6.6.6.6, 203.0.113.9, 10.0.0.1' })).toBe('203.0.113.9');
    expect(clientIp(1, { xff: ['6.6.6.6', '203.0.113.9'] })).toBe('203.0.113.9');
  });

  it('stops at the leftmost entry when there are fewer hops than trusted', () => {
    expect(clientIp(3, { xff: '203.0.113.9' })).toBe('203.0.113.9');
    expect(clientIp(1, {})).toBe('127.0.0.1');
  });

  it('falls back toward the trusted side when the chosen entry is not an address', () => {
    expect(clientIp(1, { xff: '6.6.6.6, unknown' })).toBe('127.0.0.1');
  });

  it('normalizes forwarded entries', () => {
    expect(clientIp(1, { xff: '[2001:db8::7]:443' })).toBe('2001:db8::7');
  });

  it('rejects invalid counts', () => {
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => createProxyTrust(bad)).toThrow(TypeError);
    }
    expect(() => createProxyTrust(true as unknown as TrustProxy)).toThrow(/trustProxy/);
  });
});

describe('createProxyTrust(CIDR ranges)', () => {
  it('walks from the right, skipping trusted proxies', () => {
    const setting = ['127.0.0.1/32', '10.0.0.0/8'];
    expect(clientIp(setting, { xff: '6.6.6.6, 203.0.113.9, 10.1.2.3' })).toBe('203.0.113.9');
    expect(clientIp(setting, { xff: '203.0.113.9' })).toBe('203.0.113.9');
  });

  it('never takes a spoofed leftmost entry past an untrusted one', () => {
    // The client claims to be a trusted proxy's client; the untrusted hop ends the walk.
    expect(clientIp('10.0.0.0/8', { peer: '10.0.0.2', xff: '10.6.6.6, 203.0.113.9' })).toBe(
      '203.0.113.9',
    );
  });

  it('takes the socket peer when it is not trusted', () => {
    expect(clientIp('10.0.0.0/8', { peer: '198.51.100.4', xff: '6.6.6.6' })).toBe('198.51.100.4');
  });

  it('accepts a comma-separated string and the named ranges', () => {
    expect(clientIp('loopback, 10.0.0.0/8', { xff: '203.0.113.9, 10.0.0.3' })).toBe('203.0.113.9');
    expect(clientIp('private', { peer: '10.0.0.2', xff: '203.0.113.9, 192.168.1.1' })).toBe(
      '203.0.113.9',
    );
    expect(clientIp(['linklocal'], { peer: '169.254.1.1', xff: '203.0.113.9' })).toBe(
      '203.0.113.9',
    );
    expect(clientIp('LOOPBACK', { peer: '::1', xff: '2001:db8::9' })).toBe('2001:db8::9');
  });

  it('matches IPv6 ranges and single addresses', () => {
    expect(clientIp(['fd00::/8'], { peer: 'fd00::1', xff: '2001:db8::9, fd00::2' })).toBe(
      '2001:db8::9',
    );
    expect(clientIp(['192.0.2.10'], { peer: '192.0.2.10', xff: '203.0.113.9' })).toBe(
      '203.0.113.9',
    );
  });

  it('rejects what is not a range', () => {
    for (const bad of ['bogus', '10.0.0.0/33', '::/129', '10.0.0.0/x', 'loopback,']) {
      const attempt = () => createProxyTrust(bad);
      expect(attempt).toThrow(TypeError);
      try {
        attempt();
      } catch (error) {
        expect((error as { code?: string }).code).toBe('ERR_INVALID_OPTION');
      }
    }
  });
});

describe('isSecure', () => {
  it('believes X-Forwarded-Proto from a trusted proxy', () => {
    const trust = createProxyTrust(1);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: 'https' }))).toBe(true);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: 'HTTPS' }))).toBe(true);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: 'http' }))).toBe(false);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9' }))).toBe(false);
  });

  it('reads the proto of the trusted hop, not a spoofed one on its left', () => {
    const trust = createProxyTrust(1);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: 'https, http' }))).toBe(false);
    const two = createProxyTrust(2);
    expect(two.isSecure(fakeRequest({ xff: '203.0.113.9, 10.0.0.1', proto: 'https, http' }))).toBe(
      true,
    );
  });

  it('ignores X-Forwarded-Proto from an untrusted peer', () => {
    const trust = createProxyTrust('10.0.0.0/8');
    expect(
      trust.isSecure(fakeRequest({ peer: '198.51.100.4', xff: '203.0.113.9', proto: 'https' })),
    ).toBe(false);
    expect(
      trust.isSecure(fakeRequest({ peer: '10.0.0.4', xff: '203.0.113.9', proto: 'https' })),
    ).toBe(true);
  });

  it('believes a trusted peer that sets X-Forwarded-Proto without X-Forwarded-For', () => {
    expect(createProxyTrust(1).isSecure(fakeRequest({ proto: 'https' }))).toBe(true);
    expect(createProxyTrust('loopback').isSecure(fakeRequest({ proto: 'https' }))).toBe(true);
    expect(
      createProxyTrust('10.0.0.0/8').isSecure(fakeRequest({ peer: '192.0.2.1', proto: 'https' })),
    ).toBe(false);
  });

  it('takes an empty X-Forwarded-Proto, or empty entries of one, as none', () => {
    const trust = createProxyTrust(1);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: ' ' }))).toBe(false);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: 'https, ' }))).toBe(true);
    expect(trust.isSecure(fakeRequest({ xff: '203.0.113.9', proto: ' , ' }))).toBe(false);
  });

  it('is one trust per setting, which reads a request’s scheme once for every middleware', () => {
    expect(createProxyTrust(1)).toBe(createProxyTrust(1));
    expect(createProxyTrust('loopback')).toBe(createProxyTrust(['loopback']));
    expect(createProxyTrust(2)).not.toBe(createProxyTrust(1));
    let reads = 0;
    const req = fakeRequest({ xff: '203.0.113.9' });
    Object.defineProperty(req.headers, 'x-forwarded-proto', {
      get: () => {
        reads++;
        return 'https';
      },
    });
    const [https, hsts] = [createProxyTrust(1), createProxyTrust(1)];
    expect([https.isSecure(req), hsts.isSecure(req), https.isSecure(req)]).toEqual([
      true,
      true,
      true,
    ]);
    expect(reads).toBe(1);
  });

  it('is true over its own TLS whatever the headers say', () => {
    const trust = createProxyTrust(1);
    expect(trust.isSecure(fakeRequest({ tls: true, xff: '203.0.113.9', proto: 'http' }))).toBe(
      true,
    );
  });
});

describe('over a real socket', () => {
  it('reports the client the loopback proxy saw', async () => {
    const trust = createProxyTrust('loopback');
    const server = await serve((req, res) =>
      sendJson(res, 200, { ip: trust.clientIp(req), secure: trust.isSecure(req) }),
    );
    try {
      const res = await request(server, '/', {
        headers: { 'X-Forwarded-For': '6.6.6.6, 203.0.113.9', 'X-Forwarded-Proto': 'https' },
      });
      expect(json(res)).toEqual({ ip: '203.0.113.9', secure: true });
      const direct = await request(server, '/');
      expect(json(direct)).toEqual({ ip: '127.0.0.1', secure: false });
    } finally {
      await server.close();
    }
  });
});
