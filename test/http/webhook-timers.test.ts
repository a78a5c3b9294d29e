import assert from 'node:assert/strict';
import { after, describe, mock, test } from 'node:test';
import { createDeliveryAgents, HOST_CHECK_TIMEOUT_MS, hostRefusal, postWebhook } from '../../src/modules/webhooks/index.ts';
import { startReceiver } from '../support/webhook-receiver.ts';

// Webhook time-outs on a set clock. Node's mock timers replace setTimeout for the whole process, so
// these run in a file of their own, with no app and no queue workers: a worker that scheduled its
// next poll while the clock was set would never poll again once it is reset.

describe('a delivery\'s time-out', () => {
  test('a delivery given no time-out of its own waits 10 s for the answer, on a set clock', async (ctx) => {
    const receiver = await startReceiver(['hang']);
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    ctx.mock.timers.enable({ apis: ['setTimeout'] });
    let settled = false;
    const attempt = postWebhook(receiver.url, '{}', { 'content-type': 'application/json' }, { allowPrivateNetworks: true, agents })
      .finally(() => { settled = true; });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    while (receiver.received.length === 0) await turn();
    ctx.mock.timers.tick(9_999);
    for (let i = 0; i < 10; i++) await turn();
    assert.equal(settled, false, 'still waiting a millisecond before 10 s');
    ctx.mock.timers.tick(1);
    for (let i = 0; i < 10 && !settled; i++) await turn();
    assert.equal(settled, true, 'given up at 10 s');
    const { latencyMs: _latency, ...result } = await attempt;
    assert.deepEqual(result, { status: null, error: 'no answer within 10000 ms', refused: false });
    receiver.release();
  });
});

describe('the address check when a URL is set', () => {
  test('a name whose resolver does not answer is not refused after the check\'s time-out: the request that sets the URL is not held', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      let settled: unknown = 'pending';
      const asked: string[] = [];
      void hostRefusal('slow.example', (host) => { asked.push(host); }).then((value) => { settled = value; });
      mock.timers.tick(HOST_CHECK_TIMEOUT_MS - 1);
      await Promise.resolve();
      assert.deepEqual([asked, settled], [['slow.example'], 'pending'], 'still waiting just before the time-out');
      mock.timers.tick(1);
      await Promise.resolve();
      assert.equal(settled, null, 'not refused: each delivery checks the address it connects to');
      // A resolver that does answer in time is still heard: a private address is refused.
      const refused = await hostRefusal('inside.example', (_host, _options, callback) => callback(null, [{ address: '10.1.2.3', family: 4 }]));
      assert.equal(refused?.which, 'inside.example (10.1.2.3)');
    } finally {
      mock.timers.reset();
    }
  });
});
