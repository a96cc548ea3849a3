// Telemetry never in the agent's way: a collector that is down (a port nothing listens
// on) costs the agent nothing and is told once; the application's own provider is used
// as it is; the SDK's calls with bad arguments are swallowed and counted.

import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';

import { InMemorySpanExporter, SimpleSpanProcessor, BasicTracerProvider } from '@opentelemetry/sdk-trace-base';

import { observe } from '../index.js';

/** An address nothing listens on: a port the system gave, then closed. */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

test('a collector that is down costs the agent nothing and is told once', async () => {
  const warnings = [];
  const onWarning = (w) => { if (w.name === 'OtelbenchWarning') warnings.push(w.message); };
  process.on('warning', onWarning);
  try {
    const agent = observe({ agent: 'lonely', endpoint: await closedPort() });
    const thrown = new Error('the agent\'s own');
    const t0 = performance.now();
    for (let i = 0; i < 300; i++) {
      assert.equal(await agent.task('t', i, async (t) => { t.log('step', i); return i * 2; }), i * 2);
    }
    await assert.rejects(agent.task('t', 'x', () => { throw thrown; }), (e) => e === thrown);
    const spentMs = performance.now() - t0;
    assert.ok(spentMs < 1000, `${spentMs.toFixed(0)} ms for 301 tasks`); // the export's retries are in the background

    const flushing = performance.now();
    assert.equal(await agent.flush({ timeoutMs: 30_000 }), false); // resolves (not all went out) once the export gives up
    assert.ok(performance.now() - flushing < 10_000); // its 5 s timeout, retries included
    const stats = agent.stats();
    assert.equal(stats.ended, 301);
    assert.equal(stats.exported, 0);
    assert.equal(stats.failed + stats.dropped, 301);
    await new Promise((resolve) => setImmediate(resolve)); // process.emitWarning tells on the next tick
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0], /^otelbench: 301 spans dropped \(.+\); the agent goes on \(agent\.stats\(\) has the counts\)$/);
  } finally {
    process.off('warning', onWarning);
  }
});

test('the application\'s own provider is used as it is', async () => {
  const seen = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(seen)] });
  const agent = observe({ agent: 'guest', tracerProvider: provider }); // its processors decide where spans go
  await agent.task('t', 'hello', async (t) => {
    agent.event('checkpoint', { step: 2, detail: { nested: true }, none: null });
    t.setAttribute('tries', 3);
    t.setOutput('bye');
    return 'ignored: setOutput gave the output';
  });
  const [span] = seen.getFinishedSpans();
  assert.equal(span.name, 'invoke_agent guest');
  assert.deepEqual(span.attributes, {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'guest',
    'otelbench.task': 't',
    'gen_ai.input.messages': '[{"role": "user", "parts": [{"type": "text", "content": "hello"}]}]',
    'gen_ai.output.messages': '[{"role": "assistant", "parts": [{"type": "text", "content": "bye"}]}]',
    tries: 3,
  });
  assert.deepEqual(span.events.map((e) => [e.name, e.attributes]), [['checkpoint', { step: 2, detail: '{"nested": true}' }]]);
  assert.deepEqual(agent.stats(), { ended: 0, exported: 0, failed: 0, dropped: 0, ignored: 0 }); // nothing of ours exported
});

test('calls the SDK cannot honour are swallowed and counted, and the task goes on', async () => {
  const seen = new InMemorySpanExporter();
  const agent = observe({ agent: 'careless', tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(seen)] }),
    captureContent: false });
  let kept;
  const answer = await agent.task('t', 'secret input', async (t) => {
    kept = t;
    t.cost('twelve');
    t.cost({ usd: 1 });
    t.cost(Infinity);
    t.cost('0.5'); // a number as text is a number
    t.log({ toJSON() { throw new Error('no'); } }); // still a line: as Node prints it
    t.log(10n, Symbol('s'), null, undefined);
    return 'secret output';
  });
  assert.equal(answer, 'secret output');
  kept.log('after the end'); // the task has ended
  kept.cost(1);
  kept.setOutput('late');
  agent.event('after', { when: () => 1 });
  assert.deepEqual(agent.stats(), { ended: 0, exported: 0, failed: 0, dropped: 0, ignored: 6 });
  const [span, eventSpan] = seen.getFinishedSpans();
  assert.equal(span.attributes['gen_ai.usage.cost'], 0.5);
  assert.equal(span.attributes['gen_ai.input.messages'], undefined); // captureContent: false
  assert.equal(span.attributes['gen_ai.output.messages'], undefined);
  assert.deepEqual(span.events.map((e) => e.attributes.message), ['{ toJSON: [Function: toJSON] }', '10 Symbol(s) null undefined']);
  assert.equal(eventSpan.name, 'event after'); // outside any task: a span of its own
  assert.equal(eventSpan.attributes.when, '"() => 1"');
});
