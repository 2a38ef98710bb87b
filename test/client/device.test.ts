// deviceSignIn() against a stand-in provider: the code shown once, polls at the provider's
// interval and 5 s slower after slow_down (RFC 8628 §3.5), tokens at the end; a refusal, an
// expired code and a cancelled sign-in each end it with their own error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceSignIn } from '../../src/client/device.ts';
import { upstreamProvider } from '../../src/client/provider.ts';
import { type StandIn, startStandIn } from '../helpers/stand-in-provider.ts';

let stand: StandIn;
beforeAll(async () => {
  stand = await startStandIn('oidc');
});
afterAll(() => stand.close());

const provider = () =>
  upstreamProvider({
    name: 'cli',
    issuer: stand.url,
    clientId: 'cli',
    scope: 'openid offline_access',
  });

describe('deviceSignIn()', () => {
  it('shows the code, polls at the interval, slower after slow_down, and answers the tokens', async () => {
    stand.devicePolls = ['authorization_pending', 'slow_down', 'tokens'];
    stand.devicePolledAt = [];
    const shown: unknown[] = [];
    const tokens = await deviceSignIn({
      provider: provider(),
      onCode: (code) => void shown.push(code),
    });
    expect(shown).toEqual([
      {
        userCode: 'WDJB-MJHT',
        verificationUri: `${stand.url}/device`,
        verificationUriComplete: `${stand.url}/device?user_code=WDJB-MJHT`,
        expiresAt: expect.any(Number),
      },
    ]);
    expect(tokens).toMatchObject({
      accessToken: 'at-device',
      refreshToken: 'rt-device',
      tokenType: 'bearer',
    });
    const [first, second, third] = stand.devicePolledAt;
    expect(second! - first!).toBeGreaterThanOrEqual(950);
    // slow_down: the interval grows by 5 seconds (1 + 5)
    expect(third! - second!).toBeGreaterThanOrEqual(5_900);
    expect(stand.tokenRequests.at(-1)!.body.get('device_code')).toBe('dc-1');
  }, 20_000);

  it('ends with ERR_SIGN_IN_REFUSED or ERR_SIGN_IN_EXPIRED', async () => {
    stand.devicePolls = ['access_denied'];
    await expect(deviceSignIn({ provider: provider(), onCode: () => {} })).rejects.toMatchObject({
      code: 'ERR_SIGN_IN_REFUSED',
      message: 'The sign-in at cli was refused.',
    });
    stand.devicePolls = ['expired_token'];
    await expect(deviceSignIn({ provider: provider(), onCode: () => {} })).rejects.toMatchObject({
      code: 'ERR_SIGN_IN_EXPIRED',
    });
  }, 20_000);

  it('stops polling when cancelled', async () => {
    stand.devicePolls = [];
    stand.devicePolledAt = [];
    const controller = new AbortController();
    const running = deviceSignIn({
      provider: provider(),
      onCode: () => {
        setTimeout(() => controller.abort(new Error('cancelled by the user')), 1_500);
      },
      signal: controller.signal,
    });
    await expect(running).rejects.toThrow('cancelled by the user');
    const polls = stand.devicePolledAt.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(stand.devicePolledAt.length).toBe(polls);
  }, 20_000);
});
