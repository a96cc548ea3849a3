// Telemetry never in the agent's way: a collector that is down (a port nothing listens
// on) costs the agent nothing and is told once; one that answers in 2 s adds < 1 ms a
// task; the application's own provider is used as it is; the SDK's calls with bad arguments are swallowed and counted.

import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { test } from 'node:test';

import { InMemorySpanExporter, SimpleSpanProcessor, BasicTracerProvider } from '@opentelemetry/sdk-trace-base';

import { QUEUE_SPANS, observe } from '../index.js';

/** An address nothing listens on: a port the system gave, then closed. */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

test('a collector that is down costs the agent nothing, is told once, and every span is counted', async () => {
  const warnings = [];
  const onWarning = (w) => { if (w.name === 'OtelbenchWarning') warnings.push(w.message); };
  process.on('warning', onWarning);
  try {
    const agent = observe({ agent: 'lonely', endpoint: await closedPort() });
    const thrown = new Error('the agent\'s own');
    const t0 = performance.now();
    for (let i = 0; i < 2100; i++) { // more than the queue holds: exports retry for 5 s meanwhile
      assert.equal(await agent.task('t', i, async (t) => { t.log('step', i); return i * 2; }), i * 2);
    }
    await assert.rejects(agent.task('t', 'x', () => { throw thrown; }), (e) => e === thrown);
    const spentMs = performance.now() - t0;
    assert.ok(spentMs < 2000, `${spentMs.toFixed(0)} ms for 2101 tasks`); // the export's retries are in the background

    const flushing = performance.now();
    assert.equal(await agent.flush({ timeoutMs: 30_000 }), false); // resolves (not all went out) once the exports give up
    assert.ok(performance.now() - flushing < 10_000); // their 5 s timeout, retries included
    assert.deepEqual(agent.stats(), { ended: 2101, exported: 0, failed: QUEUE_SPANS, dropped: 2101 - QUEUE_SPANS, ignored: 0 });
    await new Promise((resolve) => setImmediate(resolve)); // process.emitWarning tells on the next tick
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.equal(warnings[0],
      'otelbench: 1 spans dropped (the export queue was full); the agent goes on (agent.stats() has the counts)');
  } finally {
    process.off('warning', onWarning);
  }
});

test('a slow collector does not slow the agent by a millisecond', async () => {
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(), 2000));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const agent = observe({ agent: 'patient', endpoint: `http://127.0.0.1:${server.address().port}` });
    const work = () => {
      let sum = 0;
      for (let i = 0; i < 2000; i++) sum += i;
      return sum;
    };
    const timed = async (withSdk) => {
      const t0 = performance.now();
      if (withSdk) await agent.task('t', 'x', async () => work());
      else await (async () => work())();
      return performance.now() - t0;
    };
    // alternate, so the machine's noise falls on both alike; an export is started every 50
    // tasks, each waiting on the slow collector while the tasks go on
    const plain = [];
    const observed = [];
    const flushes = [];
    for (let i = 0; i < 400; i++) {
      plain.push(await timed(false));
      observed.push(await timed(true));
      if (i % 50 === 0) flushes.push(agent.flush());
    }
    flushes.push(agent.flush());
    assert.deepEqual(await Promise.all(flushes), flushes.map(() => true));
    assert.equal(agent.stats().exported, 400);
    const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
    const extraMs = median(observed) - median(plain);
    assert.ok(extraMs < 1, `${extraMs.toFixed(3)} ms more per task`);
    console.log(`a task with the SDK: ${(extraMs * 1000).toFixed(0)} µs more (median of 400)`);
  } finally {
    server.closeAllConnections();
    server.close();
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
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(seen)] });
  const agent = observe({ agent: 'careless', tracerProvider: provider,
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
  assert.deepEqual(span.events.map((e) => e.attributes.message),
    ['{ toJSON: [Function: toJSON] }', '10 Symbol(s) null undefined']);
  assert.equal(eventSpan.name, 'event after'); // outside any task: a span of its own
  assert.equal(eventSpan.attributes.when, '"() => 1"');
  assert.equal(await agent.flush(null), true);
  assert.deepEqual(agent.stats(), { ended: 0, exported: 0, failed: 0, dropped: 0, ignored: 6 });
});

test('mistakes in the program fail at once', async () => {
  assert.throws(() => observe({ endpoint: 'http://127.0.0.1:4318' }), TypeError); // no agent name
  assert.throws(() => observe({ agent: 'a', endpoint: 'not a url' }), /not a url/);
  const agent = observe({ agent: 'hasty', tracerProvider: new BasicTracerProvider() });
  await assert.rejects(agent.task('t', 'input, and no function'), TypeError);
});
