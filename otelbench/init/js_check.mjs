// `otelbench init --check` for a JavaScript project: run as `node --input-type=module -e`
// in the project's folder, so every import resolves from the project's own node_modules.
// Imports each package the plan names (and the names its snippet uses), then sends one
// invoke_agent span through the project's NodeSDK and OTLP/HTTP protobuf exporter, shuts
// down, and prints one JSON line: {trace_id, ok, error} or {missing: [...]}.
const { endpoint, key, agent, imports } = JSON.parse(process.argv[1]);

const missing = [];
for (const [name, names] of Object.entries(imports)) {
  let module;
  try {
    module = await import(name);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    missing.push(name);
    continue;
  }
  for (const wanted of names) {
    if (module[wanted] === undefined && module.default?.[wanted] === undefined) missing.push(`${name} (${wanted})`);
  }
}
if (missing.length) {
  console.log(JSON.stringify({ missing }));
  process.exit(0);
}

const { NodeSDK, api, tracing } = await import('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');

const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces`,
  headers: key ? { 'x-bench-key': key } : {}, timeoutMillis: 10000 });
let result = null;  // the collector's answer to the one export
const answered = {
  export(spans, done) {
    exporter.export(spans, (r) => { result = r; done(r); });
  },
  shutdown: () => exporter.shutdown(),
  forceFlush: () => exporter.forceFlush(),
};
// no resource detection: the host's and process's attributes are not the agent's
const sdk = new NodeSDK({ serviceName: agent, autoDetectResources: false, instrumentations: [],
  spanProcessors: [new tracing.SimpleSpanProcessor(answered)] });
sdk.start();
const span = api.trace.getTracer('otelbench.init').startSpan(`invoke_agent ${agent}`, { attributes: {
  'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': agent,
  'gen_ai.input.messages': '[{"role":"user","parts":[{"type":"text","content":"otelbench init --check"}]}]',
} });
const traceId = span.spanContext().traceId;
span.end();
await sdk.shutdown();
console.log(JSON.stringify({ trace_id: traceId, ok: result?.code === 0,
  error: result?.error?.message ?? (result ? null : 'no export happened') }));
