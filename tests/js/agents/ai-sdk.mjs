// The weather agent on the Vercel AI SDK 7 with @ai-sdk/otel: generateText (or streamText,
// with --stream) with the tool, up to 3 steps, telemetry through the integration named by
// --legacy (LegacyOpenTelemetry, the ai.* span shape of AI SDK 6) or else OpenTelemetry
// (GenAI semantic conventions).
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { LegacyOpenTelemetry, OpenTelemetry } from '@ai-sdk/otel';
import { generateText, isStepCount, registerTelemetry, streamText, tool } from 'ai';

import { AGENT_NAME, API_KEY, INSTRUCTIONS, MODEL, QUESTION, WEATHER_TOOL, baseURL, report,
  startOtel } from './weather.mjs';

const flags = new Set(process.argv.slice(5));
const sdk = startOtel();
registerTelemetry(flags.has('--legacy') ? new LegacyOpenTelemetry() : new OpenTelemetry({ agentSpanName: 'functionId' }));

const provider = createOpenAICompatible({ name: 'openai', baseURL, apiKey: API_KEY, includeUsage: true });
const options = {
  model: provider.chatModel(MODEL),
  system: INSTRUCTIONS,
  prompt: QUESTION,
  tools: { get_weather: tool(WEATHER_TOOL) },
  stopWhen: isStepCount(3),
  maxRetries: 0,
  telemetry: { functionId: AGENT_NAME },
};
let output;
if (flags.has('--stream')) {
  const result = streamText(options);
  output = await result.text;
} else {
  output = (await generateText(options)).text;
}
await sdk.shutdown();
report(output, ['ai', '@ai-sdk/otel', '@ai-sdk/openai-compatible', '@opentelemetry/sdk-node',
  '@opentelemetry/exporter-trace-otlp-proto']);
