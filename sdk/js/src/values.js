// What a task's values become on its span: the GenAI messages JSON, attribute values, log
// lines. JSON is written as Python's json.dumps writes it (", " and ": ", non-ASCII as is),
// so one input gives the same text from either SDK (tests/test_sdk_js.py compares them).

import { inspect } from 'node:util';

export const TEXT_CHARS = 64_000; // of an input or output attribute, a log line

/** `text` cut to `chars` UTF-16 units, with an ellipsis when cut (never half a surrogate pair). */
export function clip(text, chars = TEXT_CHARS) {
  if (text.length <= chars) return text;
  let end = chars;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end) + '…';
}

/** `value` as JSON text, with json.dumps's separators; what JSON cannot hold, as text. */
export function toJson(value) {
  return write(value, new Set());
}

function write(value, seen) {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string': return JSON.stringify(value);
    case 'number': return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean': return value ? 'true' : 'false';
    case 'bigint': return value.toString();
    case 'function': case 'symbol': return JSON.stringify(String(value));
    default: break;
  }
  if (seen.has(value)) return '"[Circular]"';
  seen.add(value);
  try {
    if (typeof value.toJSON === 'function') return write(value.toJSON(), seen);
    if (value instanceof Error) return JSON.stringify(String(value));
    if (Array.isArray(value) || value instanceof Set) {
      return '[' + Array.from(value, (v) => write(v, seen)).join(', ') + ']';
    }
    const entries = value instanceof Map ? Array.from(value, ([k, v]) => [String(k), v]) : Object.entries(value);
    const kept = entries.filter(([, v]) => v !== undefined && typeof v !== 'function' && typeof v !== 'symbol');
    return '{' + kept.map(([k, v]) => `${JSON.stringify(k)}: ${write(v, seen)}`).join(', ') + '}';
  } finally {
    seen.delete(value);
  }
}

/** `value` as the GenAI semconv's messages JSON: one message of one text part. */
export function messages(role, value) {
  const body = typeof value === 'string' ? value : toJson(value);
  return toJson([{ role, parts: [{ type: 'text', content: clip(body) }] }]);
}

/** Values an OTel attribute can hold: string, boolean, number (others as JSON text); null and undefined left out. */
export function attributes(values) {
  const out = {};
  for (const [k, v] of Object.entries(values ?? {})) {
    if (typeof v === 'string') out[k] = clip(v);
    else if (typeof v === 'boolean' || typeof v === 'number') out[k] = v;
    else if (v !== null && v !== undefined) out[k] = clip(toJson(v));
  }
  return out;
}

/** The parts of a log line joined by spaces: text as it is, anything else as JSON (else as Node prints it). */
export function logLine(parts) {
  return clip(parts.map(text).join(' '));
}

/** `value` as text: a string as it is, an error as `Name: message`, anything else as JSON (else as Node prints it). */
export function text(value) {
  if (typeof value === 'string') return value;
  if (value instanceof Error) return String(value);
  if (value === null || typeof value !== 'object') return String(value);
  try {
    return toJson(value);
  } catch {
    return inspect(value);
  }
}

/** The name of what was thrown: its class for an object (`TypeError`), else its type (`string`). */
export function typeName(thrown) {
  if (thrown !== null && typeof thrown === 'object') {
    return thrown.constructor?.name || (typeof thrown.name === 'string' && thrown.name) || 'Object';
  }
  return typeof thrown;
}

/** What was thrown as a status message: an error's message (else its type), anything else as text. */
export function errorMessage(thrown) {
  if (thrown instanceof Error) return clip(thrown.message || typeName(thrown), 1000);
  return clip(text(thrown) || typeName(thrown), 1000);
}
