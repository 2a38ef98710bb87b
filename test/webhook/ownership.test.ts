import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRevocations, processRevocations } from '../../src/auth/revocations.js';
import { HttpError } from '../../src/core/errors/errors.js';
import { MemoryWebhookStore } from '../../src/webhook/memory-store.js';
import { webhookCredentialIds } from '../../src/webhook/ownership.js';
import { createWebhookSender, type WebhookSender } from '../../src/webhook/sender.js';
import type { WebhookSenderEvent, WebhookSenderOptions } from '../../src/webhook/sender-options.js';
import type { WebhookEndpoint } from '../../src/webhook/store.js';
import { closeAll, listen } from '../helpers/http.js';

const senders: WebhookSender[] = [];
afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.close()));
  await closeAll();
});

/** A real receiving server that counts what reaches it. */
async function receiver() {
  const ids: string[] = [];
  const listening = await listen((req, res) => {
    req.resume();
    req.on('end', () => {
      ids.push(String(req.headers['webhook-id']));
      res.writeHead(204).end();
    });
  });
  return { url: `${listening.url}/hook`, ids };
}

function sender(options: WebhookSenderOptions = {}) {
  const events: WebhookSenderEvent[] = [];
  const s = createWebhookSender({
    allowHttp: true,
    allowPrivate: true,
    schedule: [60_000],
    jitter: 0,
    pollInterval: '20ms',
    revocations: createRevocations(),
    onEvent: (e) => events.push(e),
    ...options,
  });
  senders.push(s);
  return { sender: s, events };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error as HttpError,
  );

describe('webhook endpoints: owners', () => {
  it('caps the endpoints of one owner (422 on the 11th), other owners unaffected', async () => {
    const { sender: s } = sender();
    for (let i = 0; i < 10; i++) {
      await s.addEndpoint({ url: `http://127.0.0.1:1/hook/${i}`, owner: 'mallory' });
    }
    const eleventh = await refusal(
      s.addEndpoint({ url: 'http://127.0.0.1:1/hook/10', owner: 'mallory' }),
    );
    expect(eleventh).toBeInstanceOf(HttpError);
    expect(eleventh.status).toBe(422);
    expect(eleventh.errors).toEqual([{ field: 'url', message: expect.stringMatching(/10/) }]);
    expect(await s.listEndpoints({ owner: 'mallory' })).toHaveLength(10);
    // another owner, and the app's own (ownerless) endpoints, are not counted
    await s.addEndpoint({ url: 'http://127.0.0.1:1/hook/10', owner: 'alice' });
    await s.addEndpoint({ url: 'http://127.0.0.1:1/hook/10' });
    // removing one frees a place
    const [first] = await s.listEndpoints({ owner: 'mallory' });
    expect(await s.removeEndpoint(first!.id)).toBe(true);
    await s.addEndpoint({ url: 'http://127.0.0.1:1/hook/10', owner: 'mallory' });
  });

  it('honours maxEndpointsPerOwner and validates it', async () => {
    const { sender: s } = sender({ maxEndpointsPerOwner: 1 });
    await s.addEndpoint({ url: 'http://127.0.0.1:1/a', owner: 'bob' });
    expect(
      (await refusal(s.addEndpoint({ url: 'http://127.0.0.1:1/b', owner: 'bob' }))).status,
    ).toBe(422);
    expect(() => createWebhookSender({ maxEndpointsPerOwner: 0 })).toThrow(/maxEndpointsPerOwner/);
    expect(() => createWebhookSender({ revocations: {} as never })).toThrow(/revocations/);
    expect(() => createWebhookSender({ maxEndpointPerOwner: 1 } as never)).toThrow(
      /Did you mean `maxEndpointsPerOwner`\?/,
    );
  });

  it('refuses the same URL twice for one owner with 409 (after normalisation)', async () => {
    const { sender: s } = sender();
    await s.addEndpoint({ url: 'http://127.0.0.1:1/hook', owner: 'bob' });
    const again = await refusal(s.addEndpoint({ url: 'HTTP://127.0.0.1:1/hook', owner: 'bob' }));
    expect(again.status).toBe(409);
    expect(again.code).toBe('ERR_WEBHOOK_ENDPOINT_EXISTS');
    expect(await s.listEndpoints({ owner: 'bob' })).toHaveLength(1);
  });

  it('caps a concurrent burst of registrations too', async () => {
    const { sender: s } = sender();
    const burst = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) =>
        s.addEndpoint({ url: `http://127.0.0.1:1/hook/${i % 15}`, owner: 'mallory' }),
      ),
    );
    expect(burst.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    const statuses = burst.flatMap((r) => (r.status === 'rejected' ? [r.reason.status] : []));
    expect(new Set(statuses)).toEqual(new Set([409, 422]));
    const listed = await s.listEndpoints({ owner: 'mallory' });
    expect(listed).toHaveLength(10);
    expect(new Set(listed.map((e) => e.url)).size).toBe(10);
  });

  it('lists one owner’s endpoints only', async () => {
    const { sender: s } = sender();
    const a = await s.addEndpoint({ url: 'http://127.0.0.1:1/a', owner: 'alice' });
    await s.addEndpoint({ url: 'http://127.0.0.1:1/b', owner: 'bob' });
    await s.addEndpoint({ url: 'http://127.0.0.1:1/c' });
    expect((await s.listEndpoints({ owner: 'alice' })).map((e) => e.id)).toEqual([a.id]);
    expect(await s.listEndpoints({ owner: 'nobody' })).toEqual([]);
    expect(await s.listEndpoints()).toHaveLength(3);
  });

  it('validates owner and credentialIds', async () => {
    const { sender: s } = sender();
    for (const input of [
      { owner: '' },
      { owner: 'x'.repeat(201) },
      { owner: 42 },
      { credentialIds: 'grant:g1' },
      { credentialIds: [''] },
      { credentialIds: ['grant:\n'] },
      { credentialIds: Array.from({ length: 17 }, (_, i) => `grant:${i}`) },
    ]) {
      await expect(
        s.addEndpoint({ url: 'http://127.0.0.1:1/a', ...(input as object) }),
      ).rejects.toThrow(TypeError);
    }
  });
});

describe('webhook endpoints: ended with their credential', () => {
  it('removes an endpoint when its grant is revoked: nothing more reaches the receiver', async () => {
    const target = await receiver();
    const revocations = createRevocations();
    const { sender: s, events } = sender({ revocations });
    const endpoint = await s.addEndpoint({
      url: target.url,
      owner: 'alice',
      credentialIds: ['grant:g1'],
    });
    const other = await s.addEndpoint({ url: `${target.url}?other`, credentialIds: ['grant:g2'] });
    expect(endpoint.credentialIds).toEqual(['grant:g1']);

    await revocations.revoke(['grant:g1']);
    const queued = await s.send('message.created', { text: 'after the revocation' });
    expect(queued.map((d) => d.endpointId)).toEqual([other.id]);
    await vi.waitFor(() => expect(target.ids).toEqual([queued[0]!.id]));
    await vi.waitFor(async () => expect(await s.getEndpoint(endpoint.id)).toBeUndefined());
    expect(await s.listEndpoints({ owner: 'alice' })).toEqual([]);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'endpoint-revoked',
        credentialId: 'grant:g1',
        endpoint: expect.objectContaining({ id: endpoint.id }),
      }),
    );
    const revoked = events.find((e) => e.type === 'endpoint-revoked');
    expect(JSON.stringify(revoked)).not.toContain('whsec_');
    // the owner's place is free again
    await s.addEndpoint({ url: target.url, owner: 'alice', credentialIds: ['grant:g3'] });
  });

  it('drops the pending deliveries of a revoked endpoint: never sent, never dead-lettered', async () => {
    let answered = 0;
    let controlAnswered = 0;
    const failing = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/control') controlAnswered++;
        else answered++;
        res.writeHead(503).end();
      });
    });
    const revocations = createRevocations();
    // the first retry waits a second: the first attempt is seen alone, even on a loaded machine
    const { sender: s, events } = sender({ revocations, schedule: [1_000, '50ms', '50ms'] });
    const endpoint = await s.addEndpoint({
      url: `${failing.url}/hook`,
      credentialIds: ['api_key:k1'],
    });
    const [delivery] = await s.send('n', {});
    await vi.waitFor(() => expect(answered).toBe(1));
    await revocations.revoke(['api_key:k1']);
    const seen = answered;
    // the control: an endpoint of another credential on the same failing receiver, its
    // delivery sent after the revocation on the same schedule: once it is dead-lettered,
    // every retry of the revoked endpoint's delivery (each due earlier) would have been sent
    const control = await s.addEndpoint({
      url: `${failing.url}/control`,
      credentialIds: ['api_key:k2'],
    });
    const queued = await s.send('n', {});
    expect(queued.map((d) => d.endpointId)).toEqual([control.id]);
    await vi.waitFor(
      () =>
        expect(events).toContainEqual(
          expect.objectContaining({
            type: 'dead-letter',
            delivery: expect.objectContaining({ id: queued[0]!.id }),
          }),
        ),
      { timeout: 10_000, interval: 20 },
    );
    expect(controlAnswered).toBe(4); // the attempt and its 3 retries
    expect(answered).toBe(seen);
    expect(answered).toBeLessThanOrEqual(2); // at most the attempt in flight at the revocation
    expect(await s.getDelivery(delivery!.id)).toBeUndefined();
    expect(await s.getEndpoint(endpoint.id)).toBeUndefined();
    expect(
      events.filter((e) => e.type === 'dead-letter').map((e) => e.delivery.endpointId),
    ).toEqual([control.id]);
  });

  it('hears the process-wide bus by default', async () => {
    const s = createWebhookSender({ allowHttp: true, allowPrivate: true });
    senders.push(s);
    const endpoint = await s.addEndpoint({
      url: 'http://127.0.0.1:1/a',
      credentialIds: ['grant:process-default'],
    });
    await processRevocations().revoke(['grant:process-default']);
    expect(await s.send('n', {})).toEqual([]);
    await vi.waitFor(async () => expect(await s.getEndpoint(endpoint.id)).toBeUndefined());
  });

  it('refuses to register with a credential already revoked, and ignores the ids of others', async () => {
    const revocations = createRevocations();
    const { sender: s, events } = sender({ revocations });
    await revocations.revoke(['grant:gone']);
    const refused = await refusal(
      s.addEndpoint({ url: 'http://127.0.0.1:1/a', credentialIds: ['grant:gone'] }),
    );
    expect(refused.status).toBe(403);
    expect(refused.code).toBe('ERR_CREDENTIAL_REVOKED');
    expect(await s.listEndpoints()).toEqual([]);
    const kept = await s.addEndpoint({ url: 'http://127.0.0.1:1/a', credentialIds: ['grant:g9'] });
    await revocations.revoke(['grant:g8', 'api_key:g9']);
    // the control: an endpoint whose own credential is revoked next; once it is removed, a
    // removal of `kept` (heard earlier) would have been done too
    const control = await s.addEndpoint({
      url: 'http://127.0.0.1:1/b',
      credentialIds: ['grant:control'],
    });
    await revocations.revoke(['grant:control']);
    await vi.waitFor(async () => expect(await s.getEndpoint(control.id)).toBeUndefined());
    expect(await s.getEndpoint(kept.id)).toBeDefined();
    expect(events.filter((e) => e.type === 'endpoint-revoked').map((e) => e.endpoint.id)).toEqual([
      control.id,
    ]);
  });

  it('removes an endpoint registered while the revocation was under way', async () => {
    const revocations = createRevocations();
    const store = new MemoryWebhookStore();
    const original = store.addEndpoint.bind(store);
    // the registration is stored just after the revocation went through
    store.addEndpoint = async (endpoint, limits) => {
      await revocations.revoke(['grant:racing']);
      return original(endpoint, limits);
    };
    const { sender: s } = sender({ revocations, store });
    const refused = await refusal(
      s.addEndpoint({ url: 'http://127.0.0.1:1/a', credentialIds: ['grant:racing'] }),
    );
    expect(refused.status).toBe(403);
    await vi.waitFor(async () => expect(await store.listEndpoints()).toEqual([]));
  });

  it('keeps a removed endpoint removed when a late update comes in', async () => {
    const store = new MemoryWebhookStore();
    const endpoint: WebhookEndpoint = {
      id: 'ep_1',
      url: 'https://hooks.example.com/a',
      owner: 'alice',
      credentialIds: ['grant:g1'],
      secrets: ['whsec_x'],
      consecutiveFailures: 0,
      createdAt: 1,
    };
    expect(await store.addEndpoint(endpoint, { maxPerOwner: 1 })).toBe('added');
    expect(await store.listEndpoints({ credentialId: 'grant:g1' })).toHaveLength(1);
    expect(await store.deleteEndpoint('ep_1')).toBe(true);
    expect(await store.saveEndpoint({ ...endpoint, consecutiveFailures: 3 })).toBe(false);
    expect(await store.getEndpoint('ep_1')).toBeUndefined();
    expect(await store.listEndpoints({ credentialId: 'grant:g1' })).toEqual([]);
    expect(await store.addEndpoint({ ...endpoint, id: 'ep_2' }, { maxPerOwner: 1 })).toBe('added');
  });

  it('webhookCredentialIds keeps grants, clients and API keys, not sessions or single tokens', () => {
    expect(
      webhookCredentialIds({
        credentialIds: ['grant:g1', 'token:t1', 'client:c1', 'session:abc', 'api_key:k1'],
      }),
    ).toEqual(['grant:g1', 'client:c1', 'api_key:k1']);
    expect(webhookCredentialIds({})).toEqual([]);
  });
});
