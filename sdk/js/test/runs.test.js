// The SDK against a real collector (`otelbench serve`, a process of its own), read back
// through the lake's views with `otelbench sql`: a task's run with its input, output,
// reported cost and log; exceptions re-thrown unchanged and runs failed; concurrent tasks
// each with their own children; the exit's flush; TRACEPARENT's trace joined; the
// application's spans around and inside a task, its context manager (NodeSDK's) active.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { observe } from '../index.js';
import { content, startCollector, waitFor } from '../testing/collector.js';

const run = promisify(execFile);
const SDK = new URL('../index.js', import.meta.url).href;

let collector;
before(async () => { collector = await startCollector(); });
after(async () => { await collector?.stop(); });

/** The runs of `agent` in the lake once there are `n`, oldest first. */
async function runsOf(agent, n) {
  return waitFor(async () => {
    const rows = await collector.sql(`SELECT * FROM agent_runs WHERE agent = '${agent}' ORDER BY start_time`);
    return rows.length === n && rows;
  }, `${n} runs of ${agent} in the lake`);
}

test('a task is an agent run with its input, output, reported cost and log', async () => {
  const agent = observe({ agent: 'forecaster', endpoint: collector.endpoint });
  const loop = { city: 'Paris' };
  loop.self = loop;
  const answer = await agent.task('forecast', { city: 'Paris', days: 2 }, async (t) => {
    t.log('found', 3, 'results');
    t.log('state', loop); // a value JSON cannot hold is still a line
    t.cost(0.004);
    t.cost(0.001);
    t.cost('a lot'); // not a cost: ignored, counted
    t.cost(Number.NaN);
    t.cost();
    agent.event('checkpoint', { step: 2, detail: { nested: true } });
    return 'sunny';
  });
  assert.equal(answer, 'sunny');
  assert.equal(await agent.flush(), true);
  assert.deepEqual(agent.stats(), { ended: 1, exported: 1, failed: 0, dropped: 0, ignored: 3 });

  const [r] = await runsOf('forecaster', 1);
  assert.equal(r.status, 'ok');
  assert.ok(Math.abs(r.cost_usd - 0.005) < 1e-12, `cost_usd ${r.cost_usd}`);
  assert.equal(content(r.input), '{"city": "Paris", "days": 2}'); // as Python's json.dumps writes it
  assert.equal(content(r.output), 'sunny');
  assert.equal(r.root_name, 'invoke_agent forecaster');
  assert.equal(r.service_name, 'forecaster');
  assert.equal(r.llm_calls, 0);

  const [span] = await collector.sql(`SELECT name, span_type, operation, cost_source, attributes, events
                                       FROM spans WHERE trace_id = '${r.trace_id}'`);
  assert.equal(span.span_type, 'agent');
  assert.equal(span.operation, 'invoke_agent');
  assert.equal(span.cost_source, 'reported');
  assert.equal(JSON.parse(span.attributes)['otelbench.task'], 'forecast');
  assert.deepEqual(JSON.parse(span.events).map((e) => [e.name, e.attributes]), [
    ['log', { message: 'found 3 results' }],
    ['log', { message: 'state {"city": "Paris", "self": "[Circular]"}' }],
    ['checkpoint', { step: 2, detail: '{"nested": true}' }],
  ]);
});

test('an exception fails the task and reaches the agent unchanged', async () => {
  const agent = observe({ agent: 'divider', endpoint: collector.endpoint });
  const thrown = new RangeError('division by zero');
  await assert.rejects(agent.task('divide', '1/0', async () => { throw thrown; }), (e) => e === thrown);
  let parseError;
  try {
    JSON.parse('not json');
  } catch (e) {
    parseError = e;
  }
  await assert.rejects(agent.task('parse', 'not json', () => JSON.parse('not json')), // a function that is not async
    (e) => e instanceof SyntaxError && e.message === parseError.message);
  const odd = { code: 42 }; // what is thrown need not be an Error
  await assert.rejects(agent.task('odd', 'x', () => { throw odd; }), (e) => e === odd);
  assert.deepEqual(await agent.task('parse', '{"a": 1}', () => JSON.parse('{"a": 1}')), { a: 1 });
  await agent.flush();
  assert.deepEqual(agent.stats(), { ended: 4, exported: 4, failed: 0, dropped: 0, ignored: 0 });

  // Keyed by input, not by start time: the OpenTelemetry JS SDK anchors each root span's clock to
  // Date.now(), so root spans a millisecond apart may start in either order.
  const runs = await runsOf('divider', 4);
  assert.deepEqual(Object.fromEntries(runs.map((r) => [content(r.input), r.status])),
    { '1/0': 'error', 'not json': 'error', x: 'error', '{"a": 1}': 'ok' });
  assert.equal(content(runs.find((r) => r.status === 'ok').output), '{"a": 1}');
  const errors = await collector.sql(`SELECT error_type, error_message FROM spans
                                      WHERE agent_name = 'divider' AND status_code = 'error' ORDER BY error_type`);
  assert.deepEqual(errors.map((e) => [e.error_type, e.error_message]), [
    ['Object', '{"code": 42}'], ['RangeError', 'division by zero'], ['SyntaxError', parseError.message]]);
});

test('concurrent tasks each get their own run, with their own nested tasks as children', async () => {
  const agent = observe({ agent: 'busy', endpoint: collector.endpoint });
  const one = (i) => agent.task('outer', `o${i}`, async (t) => {
    await new Promise((resolve) => setTimeout(resolve, 5 * (i % 3))); // interleaved
    const inner = await agent.task('inner', `i${i}`, async () => `inner ${i}`);
    t.log(inner);
    return `outer ${i}`;
  });
  const answers = await Promise.all([0, 1, 2, 3, 4, 5].map(one));
  assert.deepEqual(answers, [0, 1, 2, 3, 4, 5].map((i) => `outer ${i}`));
  await agent.flush();

  const runs = await runsOf('busy', 6);
  assert.equal(new Set(runs.map((r) => r.trace_id)).size, 6);
  assert.deepEqual(runs.map((r) => content(r.input)).sort(), ['o0', 'o1', 'o2', 'o3', 'o4', 'o5']);
  const pairs = await collector.sql(`SELECT o.input_messages AS outer_input, i.input_messages AS inner_input
                                     FROM spans AS i JOIN spans AS o ON o.trace_id = i.trace_id AND o.span_id = i.parent_span_id
                                     WHERE i.agent_name = 'busy'`);
  assert.deepEqual(pairs.map((p) => [content(p.outer_input), content(p.inner_input)]).sort(),
    [0, 1, 2, 3, 4, 5].map((i) => [`o${i}`, `i${i}`]));
});

test('a program that never flushes still sends its last tasks as it exits', async () => {
  const script = `
    import { observe } from ${JSON.stringify(SDK)};
    const agent = observe({ agent: 'exiting' }); // OTEL_EXPORTER_OTLP_ENDPOINT from the environment
    await agent.task('last words', 'bye', async () => 'gone');
    // no flush: the exit does it`;
  const env = { PATH: process.env.PATH, OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint };
  const { stderr } = await run(process.execPath, ['--input-type=module', '-e', script], { env, timeout: 30_000 });
  assert.equal(stderr, '');
  const [r] = await runsOf('exiting', 1);
  assert.equal(content(r.output), 'gone');
});

test('tasks outside any span join the trace of TRACEPARENT', async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parent = '00f067aa0ba902b7';
  const script = `
    import { observe } from ${JSON.stringify(SDK)};
    const agent = observe({ agent: 'joining' }); // TRACEPARENT as \`otelbench suite run\` sets it
    await agent.task('case', 'q', async () => { await agent.task('step', undefined, () => 1); });
    agent.event('outside');
    await agent.flush();`;
  const env = { PATH: process.env.PATH, OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    TRACEPARENT: `00-${traceId}-${parent}-01` };
  await run(process.execPath, ['--input-type=module', '-e', script], { env, timeout: 30_000 });
  const spans = await waitFor(async () => {
    const rows = await collector.sql(`SELECT coalesce(attributes->>'$."otelbench.task"', name) AS task, trace_id,
                                             span_id, parent_span_id FROM spans WHERE service_name = 'joining'`);
    return rows.length === 3 && Object.fromEntries(rows.map((s) => [s.task, s]));
  }, 'three spans of joining');
  assert.equal(spans.case.trace_id, traceId);
  assert.equal(spans.case.parent_span_id, parent);
  assert.equal(spans.step.trace_id, traceId);
  assert.equal(spans.step.parent_span_id, spans.case.span_id); // a task inside it, as ever
  assert.equal(spans['event outside'].trace_id, traceId);
  assert.equal(spans['event outside'].parent_span_id, parent);
});

test('with the application\'s context manager, its spans are around and inside a task', async () => {
  // what NodeSDK registers; the application's spans go to its own exporter (here one in memory)
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  try {
    const appSpans = new InMemorySpanExporter();
    const app = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(appSpans)] }).getTracer('app');
    const agent = observe({ agent: 'nested', endpoint: collector.endpoint });
    await app.startActiveSpan('request', async (request) => {
      await agent.task('answer', 'q', async () => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        app.startSpan('chat smollm2').end(); // an instrumentation's call, inside the task
      });
      request.end();
    });
    await agent.flush();
    const [chat, request] = appSpans.getFinishedSpans();
    const [task] = await waitFor(async () => {
      const rows = await collector.sql("SELECT trace_id, span_id, parent_span_id FROM spans WHERE service_name = 'nested'");
      return rows.length === 1 && rows;
    }, 'the task of nested');
    assert.equal(task.trace_id, request.spanContext().traceId);
    assert.equal(task.parent_span_id, request.spanContext().spanId);
    assert.equal(chat.spanContext().traceId, task.trace_id);
    assert.equal(chat.parentSpanContext.spanId, task.span_id);
  } finally {
    context.disable();
  }
});
