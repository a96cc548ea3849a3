// The weather agent on Mastra: an Agent with the tool (createTool), the model through
// Mastra's OpenAI-compatible config at the stub, spans exported by @mastra/observability's
// OtelExporter (the custom provider, OTLP/HTTP protobuf) — Mastra's own tracing, not the
// OTel SDK's global provider.
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';

import { AGENT_NAME, API_KEY, INSTRUCTIONS, MODEL, QUESTION, SERVICE_NAME, WEATHER_TOOL, baseURL,
  endpoint, report } from './weather.mjs';

const getWeatherTool = createTool({ id: 'get_weather', ...WEATHER_TOOL });

const agent = new Agent({
  id: AGENT_NAME,
  name: AGENT_NAME,
  instructions: INSTRUCTIONS,
  model: { id: `openai/${MODEL}`, url: baseURL, apiKey: API_KEY, api: 'chat' },
  tools: { get_weather: getWeatherTool },
});

const mastra = new Mastra({
  agents: { [AGENT_NAME]: agent },
  observability: new Observability({
    configs: {
      otel: {
        serviceName: SERVICE_NAME,
        exporters: [new OtelExporter({ provider: { custom: { endpoint, protocol: 'http/protobuf' } } })],
      },
    },
  }),
});

const result = await mastra.getAgent(AGENT_NAME).generate(QUESTION, { maxSteps: 3 });
await mastra.shutdown();
report(result.text, ['@mastra/core', '@mastra/observability', '@mastra/otel-exporter',
  ['@opentelemetry/exporter-trace-otlp-proto', '@mastra/otel-exporter']]);
