// The provider the SDK makes: its spans go through a bounded queue and a batch processor
// to the OTLP/HTTP (protobuf) exporter, and every span is counted: ended, then exported,
// failed (its export failed: collector down, bad key) or dropped (no room in the queue).

import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:4318';
export const KEY_ENV = 'OTELBENCH_KEY'; // the ingest key, sent as X-Bench-Key
export const WARN_EVERY_MS = 60_000; // at most one warning about dropped telemetry per minute
export const QUEUE_SPANS = 2048; // spans ended and not yet exported or failed; more are dropped (and counted)
export const EXPORT_TIMEOUT_MS = 5000; // one export, its retries included

/** The counters behind `agent.stats()`, and the warning (at most once a minute) about lost spans. */
export class Counts {
  ended = 0;
  exported = 0;
  failed = 0;
  dropped = 0;
  ignored = 0; // calls of the SDK it could not honour (a bad argument, a task already ended...)
  inFlight = new Set(); // a promise per export under way, settled when it is counted
  #warnedAt = -Infinity;
  #unwarned = 0;

  /** One more span ended; false when the queue is full (the span is then dropped, and counted). */
  end() {
    this.ended += 1;
    if (this.ended - 1 - this.exported - this.failed - this.dropped < QUEUE_SPANS) return true;
    this.dropped += 1;
    this.#lost(1, 'the export queue was full');
    return false;
  }

  settled(n, ok, why) {
    if (ok) {
      this.exported += n;
      return;
    }
    this.failed += n;
    this.#lost(n, why || 'the export failed');
  }

  #lost(n, why) {
    this.#unwarned += n;
    const now = performance.now();
    if (now - this.#warnedAt < WARN_EVERY_MS) return;
    const lost = this.#unwarned;
    this.#warnedAt = now;
    this.#unwarned = 0;
    try {
      process.emitWarning(`otelbench: ${lost} spans dropped (${why}); the agent goes on (agent.stats() has the counts)`,
        { type: 'OtelbenchWarning', code: 'OTELBENCH_SPANS_DROPPED' });
    } catch {
      // a warning handler that throws is not ours to surface
    }
  }

  snapshot() {
    return { ended: this.ended, exported: this.exported, failed: this.failed, dropped: this.dropped,
      ignored: this.ignored };
  }
}

/** The OTLP exporter, counting what it sent and what it could not; never throws. */
class CountingExporter {
  constructor(inner, counts) {
    this.inner = inner;
    this.counts = counts;
  }

  export(spans, done) {
    let settled = false;
    let release;
    const exporting = new Promise((resolve) => { release = resolve; });
    this.counts.inFlight.add(exporting);
    const settle = (result) => {
      if (settled) return;
      settled = true;
      this.counts.inFlight.delete(exporting);
      release();
      const why = result.error ? `${result.error.name || 'Error'}: ${result.error.message}` : '';
      this.counts.settled(spans.length, result.code === ExportResultCode.SUCCESS, why);
      done(result);
    };
    try {
      this.inner.export(spans, settle);
    } catch (error) {
      settle({ code: ExportResultCode.FAILED, error });
    }
  }

  async shutdown() {
    try {
      await this.inner.shutdown();
    } catch {
      // shutting down telemetry never fails the program
    }
  }

  async forceFlush() {
    try {
      await this.inner.forceFlush?.();
    } catch {
      // as above
    }
  }
}

/** Counts each ended span and keeps the queue bounded (the batch processor's own bound is never reached). */
class CountingProcessor {
  constructor(batch, counts) {
    this.batch = batch;
    this.counts = counts;
  }

  onStart(span, parentContext) {
    this.batch.onStart(span, parentContext);
  }

  onEnd(span) {
    try {
      if (this.counts.end()) this.batch.onEnd(span);
    } catch {
      this.counts.ignored += 1;
    }
  }

  forceFlush() {
    return this.batch.forceFlush();
  }

  shutdown() {
    return this.batch.shutdown();
  }
}

/** A provider of the SDK's own (`service.name` = the agent's name) exporting to `endpoint` with `key`. */
export function ownProvider(agent, endpoint, key, counts) {
  const base = endpoint || process.env.OTEL_EXPORTER_OTLP_ENDPOINT || DEFAULT_ENDPOINT;
  const ingestKey = key ?? process.env[KEY_ENV];
  const exporter = new OTLPTraceExporter({
    url: `${base.replace(/\/+$/, '')}/v1/traces`,
    timeoutMillis: EXPORT_TIMEOUT_MS,
    headers: ingestKey ? { 'X-Bench-Key': ingestKey } : {},
  });
  const batch = new BatchSpanProcessor(new CountingExporter(exporter, counts), {
    maxQueueSize: QUEUE_SPANS, exportTimeoutMillis: EXPORT_TIMEOUT_MS * 2,
  });
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': agent }));
  return new BasicTracerProvider({ resource, spanProcessors: [new CountingProcessor(batch, counts)] });
}
