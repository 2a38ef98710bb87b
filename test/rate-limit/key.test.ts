import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { setPrincipal } from '../../src/core/principal.js';
import { createProxyTrust } from '../../src/http/proxy.js';
import { defaultRateLimitKey, ipKey, principalRateLimitKey } from '../../src/rate-limit/key.js';

describe('ipKey', () => {
  it('keeps IPv4 addresses as they are', () => {
    expect(ipKey('203.0.113.7')).toBe('203.0.113.7');
    expect(ipKey('127.0.0.1')).toBe('127.0.0.1');
  });

  it('keys IPv6 addresses by their /64 in canonical form', () => {
    expect(ipKey('2001:db8:1:2:aa:bb:cc:dd')).toBe('2001:db8:1:2::/64');
    expect(ipKey('2001:DB8:0001:0002::1')).toBe('2001:db8:1:2::/64');
    expect(ipKey('2001:db8::1')).toBe('2001:db8::/64');
    expect(ipKey('2001:db8:0:0:ffff::1')).toBe('2001:db8::/64');
    expect(ipKey('2001:0:0:1::')).toBe('2001:0:0:1::/64');
    expect(ipKey('2001:db8:0:5:1::')).toBe('2001:db8:0:5::/64');
    expect(ipKey('::1')).toBe('::/64');
    expect(ipKey('::')).toBe('::/64');
    expect(ipKey('0:0:0:1::9')).toBe('0:0:0:1::/64');
  });

  it('puts every address of one /64 under one key, and other /64s apart', () => {
    const a = ipKey('2001:db8:1:2::1');
    expect(ipKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe(a);
    expect(ipKey('2001:0db8:0001:0002:0000:0000:0000:0002')).toBe(a);
    expect(ipKey('2001:db8:1:3::1')).not.toBe(a);
  });

  it('drops brackets and zone ids', () => {
    expect(ipKey('[2001:db8:1:2::3]')).toBe('2001:db8:1:2::/64');
    expect(ipKey('fe80::1%eth0')).toBe('fe80::/64');
    expect(ipKey('fe80::1:2%25en0')).toBe('fe80::/64');
    // an IPv4 address too: the key is the address alone, whatever wrapped it
    expect(ipKey('[203.0.113.7]')).toBe('203.0.113.7');
    expect(ipKey('192.0.2.1%eth0')).toBe('192.0.2.1');
  });

  it('keys IPv4-mapped addresses as their IPv4 address', () => {
    expect(ipKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipKey('::FFFF:c000:201')).toBe('192.0.2.1');
    expect(ipKey('0:0:0:0:0:ffff:203.0.113.255')).toBe('203.0.113.255');
  });

  it('keys by /64 an address with ffff in its sixth group that is not IPv4-mapped', () => {
    // only ::ffff:0:0/96 maps IPv4: a non-zero group in the first five makes another network
    // (else every client of 2001:db8:1:2::ffff:… would share the key of one IPv4 address)
    expect(ipKey('2001::ffff:c000:201')).toBe('2001::/64');
    expect(ipKey('0:1::ffff:c000:201')).toBe('0:1::/64');
    expect(ipKey('0:0:1::ffff:c000:201')).toBe('0:0:1::/64');
    expect(ipKey('0:0:0:1:0:ffff:c000:201')).toBe('0:0:0:1::/64');
    // the fifth group is in the low 64 bits: its /64 is ::/64, not 192.0.2.1
    expect(ipKey('::1:ffff:c000:201')).toBe('::/64');
    expect(ipKey('::1:ffff:c000:202')).toBe(ipKey('::1:ffff:c000:201'));
  });

  it('reads embedded IPv4 tails of other IPv6 addresses as groups', () => {
    expect(ipKey('2001:db8:1:2:3:4:1.2.3.4')).toBe('2001:db8:1:2::/64');
    expect(ipKey('64:ff9b::192.0.2.1')).toBe('64:ff9b::/64');
  });

  it('returns what is not an address as it is', () => {
    expect(ipKey('unknown')).toBe('unknown');
    expect(ipKey('')).toBe('');
  });
});

describe('defaultRateLimitKey', () => {
  const request = (peer: string, xff?: string) =>
    ({
      headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
      socket: { remoteAddress: peer },
    }) as unknown as IncomingMessage;

  it('keys by the socket peer unless proxies are trusted', () => {
    const key = defaultRateLimitKey();
    expect(key(request('::ffff:127.0.0.1', '6.6.6.6'))).toBe('ip:127.0.0.1');
    expect(key(request('2001:db8:1:2::99'))).toBe('ip:2001:db8:1:2::/64');
  });

  it('keys by the client the trusted proxies report', () => {
    expect(defaultRateLimitKey(1)(request('127.0.0.1', '6.6.6.6, 203.0.113.9'))).toBe(
      'ip:203.0.113.9',
    );
    expect(defaultRateLimitKey('loopback')(request('::1', '6.6.6.6, 2001:db8:9:9::1'))).toBe(
      'ip:2001:db8:9:9::/64',
    );
  });

  it('takes a ready-made proxy trust', () => {
    const key = defaultRateLimitKey(createProxyTrust(['10.0.0.0/8']));
    expect(key(request('10.0.0.1', '203.0.113.9'))).toBe('ip:203.0.113.9');
  });

  it('keeps one key per connection when the peer is the client', () => {
    // a socket's remoteAddress is gone once it has closed: a request still in flight on it
    // counts under the key its connection was first seen with
    const socket: { remoteAddress?: string } = { remoteAddress: '203.0.113.5' };
    const on = (s: object) => ({ headers: {}, socket: s }) as unknown as IncomingMessage;
    const key = defaultRateLimitKey();
    expect(key(on(socket))).toBe('ip:203.0.113.5');
    socket.remoteAddress = undefined;
    expect(key(on(socket))).toBe('ip:203.0.113.5');
    // another connection from elsewhere is another key
    expect(key(on({ remoteAddress: '203.0.113.6' }))).toBe('ip:203.0.113.6');
  });

  it('reads the client anew on every request of a connection through trusted proxies', () => {
    const socket = { remoteAddress: '127.0.0.1' };
    const on = (xff: string) =>
      ({ headers: { 'x-forwarded-for': xff }, socket }) as unknown as IncomingMessage;
    const key = defaultRateLimitKey(1);
    expect(key(on('203.0.113.1'))).toBe('ip:203.0.113.1');
    expect(key(on('203.0.113.2'))).toBe('ip:203.0.113.2');
  });

  it('validates the trust setting once', () => {
    expect(() => defaultRateLimitKey('not-a-range')).toThrow(TypeError);
  });
});

describe('principalRateLimitKey', () => {
  const request = () => ({ headers: {}, socket: {} }) as unknown as IncomingMessage;

  it('is undefined without a principal, so the request counts by IP', () => {
    expect(principalRateLimitKey(request())).toBeUndefined();
  });

  it('keys an API key by its id and anyone else by subject', () => {
    const withKey = request();
    setPrincipal(withKey, { sub: 'svc-1', scopes: [], method: 'api_key', keyId: 'k-7' });
    expect(principalRateLimitKey(withKey)).toBe('key:k-7');
    const user = request();
    setPrincipal(user, { sub: 'alice', scopes: [], method: 'session' });
    expect(principalRateLimitKey(user)).toBe('user:alice');
  });
});
