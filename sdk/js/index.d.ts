// Type declarations of @otelbench/sdk (index.js); docs/sdk.md describes the SDK.

import type { Attributes, TracerProvider } from '@opentelemetry/api';

export declare const DEFAULT_ENDPOINT: string;
export declare const KEY_ENV: string;
export declare const QUEUE_SPANS: number;
export declare const EXPORT_TIMEOUT_MS: number;
export declare const EXIT_FLUSH_MS: number;

export interface ObserveOptions {
  /** The agent's name: `gen_ai.agent.name` of its tasks, and `service.name` of the SDK's provider. */
  agent: string;
  /** The collector's OTLP/HTTP address; default OTEL_EXPORTER_OTLP_ENDPOINT, else http://127.0.0.1:4318. */
  endpoint?: string;
  /** The ingest key, sent as X-Bench-Key; default OTELBENCH_KEY. */
  key?: string;
  /** Record tasks' inputs and outputs (default true). */
  captureContent?: boolean;
  /** The application's provider, used as it is (its processors decide where spans go); default a provider of the SDK's own. */
  tracerProvider?: TracerProvider;
}

export interface TaskOptions {
  /** More attributes of the task's span (values that are not text, booleans or numbers as JSON text). */
  attributes?: Record<string, unknown>;
}

export interface Stats {
  /** Spans ended. */
  ended: number;
  /** Spans the collector accepted. */
  exported: number;
  /** Spans whose export failed (collector down, bad key). */
  failed: number;
  /** Spans dropped for want of room in the queue. */
  dropped: number;
  /** Calls of the SDK it could not honour (a cost that is not a number, a task already ended...). */
  ignored: number;
}

/** What a task's function gets; no call of it ever throws. */
export declare class Task {
  /** A line of the task's log (an event `log` on its span): the parts joined by spaces, text as it is, anything else as JSON. */
  log(...parts: unknown[]): void;
  /** Add what this task cost (USD), as the owner reports it: a finite number (or its text). */
  cost(usd: number | string): void;
  /** The task's answer; else what the task's function returns. */
  setOutput(output: unknown): void;
  setAttribute(key: string, value: unknown): void;
}

export declare class Agent {
  readonly name: string;
  readonly provider: TracerProvider;
  /** Run `fn` as one task; resolves to what it returns, rejects with what it threw (the same object). */
  task<T>(name: string, input: unknown, fn: (t: Task) => T | Promise<T>, options?: TaskOptions): Promise<Awaited<T>>;
  task<T>(name: string, fn: (t: Task) => T | Promise<T>): Promise<Awaited<T>>;
  /** An event on the current task (or, outside one, a short span of its own). */
  event(name: string, attributes?: Record<string, unknown> | Attributes): void;
  /**
   * Export what ended so far; true when all of it went out, false when some failed or was
   * dropped meanwhile, or `timeoutMs` (10 s) passed. Never rejects.
   */
  flush(options?: { timeoutMs?: number }): Promise<boolean>;
  stats(): Stats;
}

/** An Agent whose tasks become `invoke_agent` spans that otelbench reads as runs. */
export declare function observe(options: ObserveOptions): Agent;
