// The weather agent every recorded stack runs (scripts/record_frameworks.py): its words,
// the tool's log, the OTel SDK exporting OTLP/HTTP protobuf to the capture server, and the
// report the recorder reads. Usage of an agent file: node <agent>.mjs ENDPOINT BASE_URL REPORT
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { z } from 'zod';

export const AGENT_NAME = 'weather_agent';
export const SERVICE_NAME = 'weather-app';
export const QUESTION = 'What is the weather in Paris?';
export const INSTRUCTIONS = 'You are a weather assistant. Use the get_weather tool to answer.';
export const TOOL_DESCRIPTION = 'Get the current weather for a city.';
export const TOOL_RESULT = 'sunny, 22 °C';
export const MODEL = 'gpt-4o-mini';
export const API_KEY = 'sk-local-stub';

export const [endpoint, baseURL, reportPath] = process.argv.slice(2);
if (!reportPath) throw new Error('usage: node <agent>.mjs ENDPOINT BASE_URL REPORT');

const toolLog = [];

/** The tool's body: logs its call, returns the canned weather. */
export function getWeather({ city }) {
  toolLog.push({ name: 'get_weather', arguments: { city }, result: TOOL_RESULT });
  return TOOL_RESULT;
}

/** The tool as the AI SDK's tool() takes it (Mastra's createTool() adds an id). */
export const WEATHER_TOOL = {
  description: TOOL_DESCRIPTION,
  inputSchema: z.object({ city: z.string().describe('City name') }),
  execute: async (input) => getWeather(input),
};

/** A NodeSDK (AsyncLocalStorage context) exporting spans over OTLP/HTTP protobuf, started.
 * No resource detection: the host's and process's attributes (paths, ports) would be recorded. */
export function startOtel() {
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': SERVICE_NAME }),
    autoDetectResources: false,
    spanProcessors: [new tracing.BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }))],
    instrumentations: [],
  });
  sdk.start();
  return sdk;
}

const require = createRequire(import.meta.url);

/** The installed version of each package, as the report's ``versions``: ``name``, or
 * ``[name, via]`` for the copy that package ``via`` loads (a nested one where they differ). */
function versions(packages) {
  const entries = packages.map((entry) => {
    const [name, via] = Array.isArray(entry) ? entry : [entry, null];
    const from = via ? createRequire(require.resolve(`${via}/package.json`)) : require;
    return [name, JSON.parse(readFileSync(from.resolve(`${name}/package.json`), 'utf8')).version];
  });
  return Object.fromEntries(entries);
}

/** What the agent code saw, for expected.json; ``packages``: the ones whose versions it names. */
export function report(output, packages) {
  writeFileSync(reportPath, JSON.stringify({ output, tool_calls: toolLog, versions: versions(packages),
    node: process.versions.node }));
}
