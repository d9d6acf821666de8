import { afterEach, describe, expect, it } from 'vitest';
import { ReceiptStore, TopUpStore, topUpAmount, type TopUpMemory } from '@faucet/sdk/react';
import { clientFor } from './client-for.ts';
import { startFakeFaucet, type FakeFaucet } from './fake-faucet.ts';

/** The top-up and receipt stores against the fake API: the trip to Stripe and back, and one call's receipt. */
let faucet: FakeFaucet | undefined;
afterEach(async () => {
  await faucet?.close();
  faucet = undefined;
});

function memory(): TopUpMemory & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

const statusRequests = (server: FakeFaucet) =>
  server.requests.filter((request) => request.path.startsWith('/v1/user/stripe/checkout-sessions/'));

/** Starts a top-up on one store (the page before Stripe) and returns the checkout id and what the page navigated to. */
async function startOnePage(server: FakeFaucet, kept: TopUpMemory, amountUsd = '25.00000000') {
  const visited: string[] = [];
  const store = new TopUpStore(clientFor(server.url), { memory: kept, navigate: (url) => visited.push(url) });
  await store.start(amountUsd, 'https://shop.example.test/wallet');
  return { store, visited, id: [...server.checkouts.keys()].at(-1)! };
}

describe('topUpAmount', () => {
  it('takes dollars and at most two decimals, as the 8-decimal wire amount', () => {
    expect(topUpAmount('10')).toBe('10.00000000');
    expect(topUpAmount(' 10.5 ')).toBe('10.50000000');
    expect(topUpAmount('0010.05')).toBe('10.05000000');
    for (const bad of ['', '10.005', '-5', '1e3', '10,00', 'ten', '12345678']) expect(topUpAmount(bad), bad).toBeUndefined();
  });
});

describe('TopUpStore', () => {
  it('starts a checkout for the amount, remembers it and leaves for the payment page', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    const { store, visited, id } = await startOnePage(faucet, kept);
    const sent = JSON.parse(faucet.requestsTo('/v1/user/stripe/checkout-sessions')[0]!.body);
    expect(sent).toEqual({ amount_usd: '25.00000000', return_url: 'https://shop.example.test/wallet' });
    expect(visited).toEqual([expect.stringContaining(`/pay/${id}`)]);
    expect([...kept.items.values()]).toEqual([id]);
    expect(store.getSnapshot().phase).toBe('redirecting');
  });

  it('back from Stripe, shows the payment as pending until the server credits it, then the credited balance', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    const { id } = await startOnePage(faucet, kept);
    // The page Stripe returned to: a new store, the same memory.
    let credited = 0;
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept, pollIntervalMs: 20, onCredited: () => credited++ });
    const phases: string[] = [];
    store.subscribe(() => phases.push(store.getSnapshot().phase));
    const server = faucet;
    // The webhook lands only once the page has looked three times (not after a fixed delay: on a busy
    // machine the looks may be slower than any delay chosen).
    const landed = (async () => {
      while (statusRequests(server).length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
      server.completeCheckout(id);
    })();
    await store.resume('success');
    await landed;
    expect(phases[0]).toBe('confirming');
    expect(statusRequests(faucet).length).toBeGreaterThan(2); // it looked while the webhook had not landed
    expect(store.getSnapshot()).toMatchObject({
      phase: 'credited',
      topUp: { checkout_session_id: id, status: 'completed', amount_usd: '25.00000000' },
      wallet: { balance_usd: '35.00000000' },
      error: undefined,
    });
    expect(credited).toBe(1);
    expect(kept.items.size).toBe(0);
  });

  it('says so when the confirmation does not come in time, and "check again" picks it up later', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    const { id } = await startOnePage(faucet, kept, '5.00000000');
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept, pollIntervalMs: 20, confirmTimeoutMs: 100 });
    await store.resume('success');
    expect(store.getSnapshot()).toMatchObject({ phase: 'unconfirmed', topUp: { status: 'pending' }, wallet: undefined });
    faucet.completeCheckout(id);
    await store.checkAgain();
    expect(store.getSnapshot()).toMatchObject({ phase: 'credited', wallet: { balance_usd: '15.00000000' } });
  });

  it('a cancelled checkout is shown as cancelled, forgotten, and never looked up', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    await startOnePage(faucet, kept);
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept });
    await store.resume('cancelled');
    expect(store.getSnapshot()).toMatchObject({ phase: 'cancelled', wallet: { balance_usd: '10.00000000' } });
    expect(kept.items.size).toBe(0);
    expect(statusRequests(faucet)).toEqual([]);
  });

  it('a return URL saying success credits nothing by itself: without a started checkout only the balance is shown', async () => {
    faucet = await startFakeFaucet();
    const store = new TopUpStore(clientFor(faucet.url), { memory: memory() });
    await store.resume('success');
    expect(store.getSnapshot()).toMatchObject({ phase: 'idle', wallet: { balance_usd: '10.00000000' } });
    expect(statusRequests(faucet)).toEqual([]);
  });

  it('an expired checkout is a failure, with a code the page can show', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    const { id } = await startOnePage(faucet, kept);
    faucet.checkouts.get(id)!.status = 'expired';
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept, pollIntervalMs: 20 });
    await store.resume('success');
    expect(store.getSnapshot()).toMatchObject({ phase: 'failed', error: { code: 'checkout_expired' } });
    expect(kept.items.size).toBe(0);
  });

  it("a checkout the server refuses is shown with the server's code and request ID; nothing is remembered or opened", async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    const visited: string[] = [];
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept, navigate: (url) => visited.push(url) });
    await store.start('5000.00000000', 'https://shop.example.test/wallet');
    expect(store.getSnapshot()).toMatchObject({ phase: 'failed', error: { code: 'invalid_request', requestId: expect.any(String) } });
    expect(visited).toEqual([]);
    expect(kept.items.size).toBe(0);
  });

  it('stop() ends the polling: no more looks at the checkout', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    await startOnePage(faucet, kept);
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept, pollIntervalMs: 10 });
    const polling = store.resume('success');
    const server = faucet;
    await expect.poll(() => statusRequests(server).length).toBeGreaterThan(1);
    store.stop();
    await polling;
    // A look already on the wire when it stopped may still arrive; none after that.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const seen = statusRequests(faucet).length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(statusRequests(faucet).length).toBe(seen);
    expect(store.getSnapshot().phase).toBe('confirming');
  });
});

describe('TopUpStore on a page mounted twice (React strict mode)', () => {
  it('the second mount, which no longer sees ?checkout= in the URL, still follows the checkout the first one read', async () => {
    faucet = await startFakeFaucet();
    const kept = memory();
    const { id } = await startOnePage(faucet, kept);
    faucet.completeCheckout(id);
    const store = new TopUpStore(clientFor(faucet.url), { memory: kept, pollIntervalMs: 20 });
    const first = store.resume('success');
    store.stop();
    await first;
    await store.resume(null);
    expect(store.getSnapshot()).toMatchObject({ phase: 'credited', wallet: { balance_usd: '35.00000000' } });
  });
});

describe('ReceiptStore', () => {
  it('loads the booked record of one call by its request ID, the latest call without one, and says when there is none', async () => {
    faucet = await startFakeFaucet();
    const client = clientFor(faucet.url);
    const first = await client.chat({ feature: 'chat', input: 'one' });
    const second = await client.chat({ feature: 'chat', input: 'two' });
    const store = new ReceiptStore(client);

    await store.load({ faucet: first.faucet });
    expect(store.getSnapshot()).toMatchObject({
      record: { request_id: first.faucet.request_id, charged_usd: '0.00001234', model: 'echo', input_tokens: 3 },
      notBooked: false,
      loading: false,
    });
    await store.load({});
    expect(store.getSnapshot().record?.request_id).toBe(second.faucet.request_id);
    await store.load({ requestId: 'sdk_not_a_call' });
    expect(store.getSnapshot()).toMatchObject({ record: undefined, notBooked: true });
    expect(faucet.requests.filter((request) => request.path === `/v1/user/usage?request_id=${first.faucet.request_id}`)).toHaveLength(1);
  });
});
