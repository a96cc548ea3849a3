// The weather agent on the Vercel AI SDK 6 (npm alias ai-v6, with its provider line
// @ai-sdk/openai-compatible 2.x as openai-compatible-v2): generateText with the tool, up to
// 3 steps, experimental_telemetry on, spans through the global tracer provider (NodeSDK).
import { generateText, stepCountIs, tool } from 'ai-v6';
import { createOpenAICompatible } from 'openai-compatible-v2';

import { AGENT_NAME, API_KEY, INSTRUCTIONS, MODEL, QUESTION, WEATHER_TOOL, baseURL, report,
  startOtel } from './weather.mjs';

const sdk = startOtel();
const provider = createOpenAICompatible({ name: 'openai', baseURL, apiKey: API_KEY, includeUsage: true });
const result = await generateText({
  model: provider.chatModel(MODEL),
  system: INSTRUCTIONS,
  prompt: QUESTION,
  tools: { get_weather: tool(WEATHER_TOOL) },
  stopWhen: stepCountIs(3),
  maxRetries: 0,
  experimental_telemetry: { isEnabled: true, functionId: AGENT_NAME },
});
await sdk.shutdown();
report(result.text, ['ai-v6', 'openai-compatible-v2', '@opentelemetry/sdk-node', '@opentelemetry/exporter-trace-otlp-proto']);
