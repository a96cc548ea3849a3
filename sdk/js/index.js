// A one-call agent SDK on the OpenTelemetry JS SDK, for agents without instrumentation:
//
//   import { observe } from '@otelbench/sdk';
//   const agent = observe({ agent: 'my-agent' });             // endpoint and key from env vars
//   const answer = await agent.task('search', { query }, async (t) => {
//     t.log('found', n); t.cost(0.004); return result;       // the return value is the output
//   });
//   agent.event('custom', { k: 'v' }); await agent.flush();
//
// The JavaScript twin of otelbench/sdk.py: a task is an `invoke_agent` span with the same
// OTel GenAI attributes, so the lake reads a run of either SDK alike (docs/sdk.md).
// Telemetry never throws into the agent: spans go through a bounded queue and a batch
// processor; what cannot be sent is counted in `agent.stats()`. The agent's own exception
// is re-thrown unchanged.

import { AsyncLocalStorage } from 'node:async_hooks';

import { ROOT_CONTEXT, SpanStatusCode, context, defaultTextMapGetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

import { Counts, ownProvider } from './src/export.js';
import { attributes, errorMessage, logLine, messages, typeName } from './src/values.js';

export { DEFAULT_ENDPOINT, EXPORT_TIMEOUT_MS, KEY_ENV, QUEUE_SPANS } from './src/export.js';

export const EXIT_FLUSH_MS = 2000; // what an exiting program waits, at most, for its last spans
const FLUSH_MS = 10_000;

// The current task, across awaits, whatever context manager the application registered
// (none, or its NodeSDK's): tasks started inside it are its children.
const current = new AsyncLocalStorage();
const exiting = new Set(); // agents with a provider of their own, flushed before the process exits

/**
 * An Agent whose tasks become `invoke_agent` spans. `endpoint`: the collector's OTLP/HTTP
 * address (default OTEL_EXPORTER_OTLP_ENDPOINT, else http://127.0.0.1:4318); `key`: the
 * ingest key (default OTELBENCH_KEY). `tracerProvider`: the application's, used as it is
 * (its processors decide where spans go); otherwise a provider of the SDK's own, never made
 * the global one, so it coexists with an application's NodeSDK. `captureContent`: record
 * tasks' inputs and outputs. A task started outside any span joins the trace of the
 * TRACEPARENT environment variable when it holds one (W3C Trace Context).
 */
export function observe({ agent, endpoint, key, captureContent = true, tracerProvider } = {}) {
  if (typeof agent !== 'string' || !agent) throw new TypeError('observe: give the agent a name ({ agent: "..." })');
  const counts = new Counts();
  const provider = tracerProvider ?? ownProvider(agent, endpoint, key, counts);
  const a = new Agent(agent, provider, counts, captureContent, environmentParent());
  if (!tracerProvider) {
    if (exiting.size === 0) process.once('beforeExit', flushAtExit);
    exiting.add(a);
  }
  return a;
}

async function flushAtExit() {
  const agents = [...exiting];
  exiting.clear();
  await Promise.all(agents.map((a) => a.flush({ timeoutMs: EXIT_FLUSH_MS })));
}

export class Agent {
  #counts;
  #capture;
  #tracer;
  #parent;

  constructor(name, provider, counts, captureContent, parent) {
    this.name = name;
    this.provider = provider;
    this.#counts = counts;
    this.#capture = captureContent;
    this.#tracer = provider.getTracer('otelbench.sdk');
    this.#parent = parent; // the context a task outside any span starts in (TRACEPARENT's)
  }

  /**
   * Run `fn(t)` as one task of the agent: `agent.task(name, input, fn)` (or `(name, fn)`
   * for none; `options.attributes` for more span attributes). Resolves to what `fn`
   * returns, which is the task's output unless `t.setOutput` gave one; rejects with what
   * `fn` threw, the same object.
   */
  async task(name, input, fn, options) {
    if (typeof input === 'function' && fn === undefined) [input, fn] = [undefined, input];
    if (typeof fn !== 'function') throw new TypeError('agent.task: give the task a function: agent.task(name, input, fn)');
    const t = new Task(this.#counts);
    try {
      t.start(this.#tracer, this.#taskAttributes(name, input, options), this.#parentContext());
    } catch {
      this.#counts.ignored += 1;
    }
    let result;
    try {
      result = await this.#run(t, fn);
    } catch (thrown) {
      t.finish(this.#capture, undefined, true, thrown);
      throw thrown;
    }
    t.finish(this.#capture, result, false);
    return result;
  }

  /** An event on the current task (or, outside one, a short span of its own). */
  event(name, attrs) {
    try {
      const values = attributes(attrs);
      const active = trace.getSpan(context.active());
      const span = active?.isRecording() ? active : current.getStore()?.span;
      if (span?.isRecording()) {
        span.addEvent(String(name), values);
        return;
      }
      const parent = this.#parentContext();
      this.#tracer.startSpan(`event ${name}`, { attributes: { 'gen_ai.agent.name': this.name, ...values } }, parent).end();
    } catch {
      this.#counts.ignored += 1;
    }
  }

  /**
   * Export what ended so far; resolves true when all of it went out, false when some
   * could not (failed or dropped meanwhile) or `timeoutMs` passed. Never rejects.
   */
  async flush(options) {
    let timer;
    try {
      const timeoutMs = options?.timeoutMs ?? FLUSH_MS;
      const counts = this.#counts;
      const lost = counts.failed + counts.dropped;
      const flushed = (async () => {
        const ok = await Promise.resolve(this.provider.forceFlush()).then(() => true, () => false);
        await Promise.all([...counts.inFlight]); // one failed export ends forceFlush: the others go on
        return ok && counts.failed + counts.dropped === lost;
      })();
      const late = new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs, false); });
      return await Promise.race([flushed, late]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Spans `ended`, `exported`, `failed` (their export failed: collector down, bad key) and
   * `dropped` (the queue was full); after `flush` the rest is in none. `ignored`: calls of
   * the SDK it could not honour (a cost that is not a number, a task already ended...).
   */
  stats() {
    return this.#counts.snapshot();
  }

  #taskAttributes(name, input, options) {
    const attrs = {
      'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': this.name,
      'otelbench.task': String(name ?? 'task'), ...attributes(options?.attributes),
    };
    if (this.#capture && input !== undefined && input !== null) attrs['gen_ai.input.messages'] = messages('user', input);
    return attrs;
  }

  /** The application's active span, else the current task, else TRACEPARENT's span, else none. */
  #parentContext() {
    const active = context.active();
    const span = trace.getSpan(active);
    if (span && trace.isSpanContextValid(span.spanContext())) return active;
    return current.getStore()?.context ?? this.#parent ?? ROOT_CONTEXT;
  }

  async #run(t, fn) {
    const store = t.span ? { span: t.span, context: t.context } : current.getStore();
    // the global context too, so the application's instrumentations nest their spans under the task
    const run = () => (store ? context.with(store.context, () => fn(t)) : fn(t));
    return store ? current.run(store, run) : run();
  }
}

/** What a task's function gets: `log`, `cost`, `setOutput`, `setAttribute`; every call is safe. */
export class Task {
  #counts;
  #cost = 0;
  #costed = false;
  #output;
  #hasOutput = false;
  #ended = false;

  constructor(counts) {
    this.#counts = counts;
    this.span = undefined;
    this.context = undefined;
  }

  /** A line of the task's log, as an event on its span: its parts joined by spaces. */
  log(...parts) {
    this.#safely(() => this.span.addEvent('log', { message: logLine(parts) }));
  }

  /** Add what this task cost (USD), as the owner reports it: labelled `reported`. */
  cost(usd) {
    this.#safely(() => {
      const value = typeof usd === 'string' && usd.trim() ? Number(usd) : typeof usd === 'bigint' ? Number(usd) : usd;
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError('a cost is a finite number');
      this.#cost += value;
      this.#costed = true;
    });
  }

  /** The task's answer (text, or anything JSON can show); else what the task's function returns. */
  setOutput(output) {
    this.#safely(() => {
      this.#output = output;
      this.#hasOutput = true;
    });
  }

  setAttribute(key, value) {
    this.#safely(() => this.span.setAttributes(attributes({ [key]: value })));
  }

  start(tracer, attrs, parent) {
    this.span = tracer.startSpan(`invoke_agent ${attrs['gen_ai.agent.name']}`, { attributes: attrs }, parent);
    this.context = trace.setSpan(parent, this.span);
  }

  finish(capture, result, failed, thrown) {
    try {
      const span = this.span;
      if (!span || this.#ended) return;
      this.#ended = true;
      const output = this.#hasOutput ? this.#output : result;
      if (capture && output !== undefined && output !== null) {
        span.setAttribute('gen_ai.output.messages', messages('assistant', output));
      }
      if (this.#costed) span.setAttribute('gen_ai.usage.cost', this.#cost);
      if (failed) {
        span.recordException(thrown instanceof Error ? thrown : { name: typeName(thrown), message: errorMessage(thrown) });
        span.setAttribute('error.type', typeName(thrown));
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(thrown) });
      }
      span.end();
    } catch {
      this.#counts.ignored += 1;
    }
  }

  #safely(change) {
    try {
      if (this.#ended || !this.span) throw new Error('the task has ended');
      change();
    } catch {
      this.#counts.ignored += 1;
    }
  }
}

/** The context of the TRACEPARENT (and TRACESTATE) environment variables; undefined when unset or not valid. */
function environmentParent() {
  const carrier = {};
  for (const name of ['TRACEPARENT', 'TRACESTATE']) if (process.env[name]) carrier[name.toLowerCase()] = process.env[name];
  if (!carrier.traceparent) return undefined;
  try {
    const found = new W3CTraceContextPropagator().extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
    const span = trace.getSpanContext(found);
    return span && trace.isSpanContextValid(span) ? found : undefined;
  } catch {
    return undefined;
  }
}
