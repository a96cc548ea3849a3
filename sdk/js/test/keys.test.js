// The ingest key against a real collector that requires one: a bad key is counted (its
// spans failed), never thrown; a good one names its owner on the run and in key_usage.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { observe } from '../index.js';
import { startCollector, waitFor } from '../testing/collector.js';

let collector;
before(async () => {
  collector = await startCollector({ auth: { keys: [{ key: 'right-key-123', owner: 'alice' }] } });
});
after(async () => { await collector?.stop(); });

test('a bad key is counted, not thrown, and a good one names the owner', async () => {
  const bad = observe({ agent: 'keyed', endpoint: collector.endpoint, key: 'wrong-key' });
  assert.equal(await bad.task('t', 'x', async () => 'answered anyway'), 'answered anyway');
  assert.equal(await bad.flush(), false);
  assert.deepEqual(bad.stats(), { ended: 1, exported: 0, failed: 1, dropped: 0, ignored: 0 });

  process.env.OTELBENCH_KEY = 'right-key-123'; // the key's default: the environment
  try {
    const good = observe({ agent: 'keyed', endpoint: collector.endpoint });
    await good.task('t', 'y', async (t) => { t.cost(0.25); });
    assert.equal(await good.flush(), true);
    assert.deepEqual(good.stats(), { ended: 1, exported: 1, failed: 0, dropped: 0, ignored: 0 });
  } finally {
    delete process.env.OTELBENCH_KEY;
  }
  const [run] = await waitFor(async () => {
    const rows = await collector.sql("SELECT owner, cost_usd, status FROM agent_runs WHERE agent = 'keyed'");
    return rows.length === 1 && rows;
  }, 'the keyed run');
  assert.deepEqual(run, { owner: 'alice', cost_usd: 0.25, status: 'ok' });
  const usage = await collector.sql('SELECT owner, spans, traces FROM key_usage');
  assert.deepEqual(usage, [{ owner: 'alice', spans: 1, traces: 1 }]);
});
