// One model call through one SDK against the stand-in, under whatever fault the Go test
// (sdkfaults_test.go) injects; prints what the caller saw as one JSON line:
//
//   node --import ./faults/netlog.mjs faults/call.mjs SDK API MODE [OPTIONS]
//
// SDK: openai | anthropic | agents | langchain | vercel. API: chat | responses | messages.
// MODE: whole | stream. OPTIONS, JSON: maxRetries and timeout (ms) given to the SDK where it
// takes them (left out: the SDK's defaults), abortAfterMs (an AbortSignal the call is given),
// tracing (agents: leave the SDK's tracing as it is by default).
//
// The line: ok, text (the answer the caller got), finish (the stream's end marker or finish
// reason, when the caller saw one), partial (text the caller had read before an error), error
// ({class, name, message, status, code, cause, reason, errors}), stage (where the error came
// from: call, stream, events, textStream, …) and elapsed_ms.
import { print } from '../common.mjs';

const [sdk, api, mode, optionsText = '{}'] = process.argv.slice(2);
const options = JSON.parse(optionsText) ?? {};
const model = 'gpt-4o-mini';
const prompt = 'faults: restock A-1';
const stream = mode === 'stream';
const clientOptions = {};
for (const k of ['maxRetries', 'timeout']) if (k in options) clientOptions[k] = options[k];

// begin starts the clock and the abort timer once the SDK is loaded and its client made, just
// before the call.
let start = Date.now();
let signal;
function begin() {
  start = Date.now();
  signal = options.abortAfterMs ? AbortSignal.timeout(options.abortAfterMs) : undefined;
}

let partial = '';
let finish;
let stage = 'call'; // where an error came from: the call, reading the stream, or after it

const calls = {
  async openai() {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI(clientOptions);
    begin();
    if (api === 'chat') {
      const params = { model, messages: [{ role: 'user', content: prompt }] };
      if (!stream) {
        const r = await client.chat.completions.create(params, { signal });
        finish = r.choices[0].finish_reason;
        return r.choices[0].message.content;
      }
      const st = await client.chat.completions.create({ ...params, stream: true }, { signal });
      stage = 'stream';
      for await (const c of st) {
        partial += c.choices[0]?.delta?.content ?? '';
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      return partial;
    }
    const params = { model, input: prompt, store: false };
    if (!stream) {
      const r = await client.responses.create(params, { signal });
      finish = r.status;
      return r.output_text;
    }
    const st = await client.responses.create({ ...params, stream: true }, { signal });
    stage = 'stream';
    for await (const ev of st) {
      if (ev.type === 'response.output_text.delta') partial += ev.delta;
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') finish = ev.response.status;
    }
    return partial;
  },

  async anthropic() {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic(clientOptions);
    begin();
    const params = { model, max_tokens: 1024, messages: [{ role: 'user', content: prompt }] };
    if (!stream) {
      const r = await client.messages.create(params, { signal });
      finish = r.stop_reason;
      return r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    }
    const st = await client.messages.create({ ...params, stream: true }, { signal });
    stage = 'stream';
    for await (const ev of st) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') partial += ev.delta.text;
      if (ev.type === 'message_delta') finish = ev.delta.stop_reason;
    }
    return partial;
  },

  async agents() {
    const agents = await import('@openai/agents');
    const { default: OpenAI } = await import('openai');
    agents.setOpenAIAPI(api === 'chat' ? 'chat_completions' : 'responses');
    if (!options.tracing) agents.setTracingDisabled(true);
    if (Object.keys(clientOptions).length > 0) agents.setDefaultOpenAIClient(new OpenAI(clientOptions));
    const agent = new agents.Agent({ name: 'restocker', instructions: 'You restock the warehouse.', model });
    begin();
    if (!stream) {
      const r = await agents.run(agent, prompt, { signal });
      return r.finalOutput;
    }
    const r = await agents.run(agent, prompt, { stream: true, signal });
    stage = 'events';
    for await (const ev of r) {
      if (ev.type === 'raw_model_stream_event' && ev.data.type === 'output_text_delta') partial += ev.data.delta;
      if (ev.type === 'raw_model_stream_event' && ev.data.type === 'response_done') finish = ev.data.response?.status ?? 'response_done';
    }
    stage = 'completed';
    await r.completed;
    stage = 'error';
    if (r.error) throw r.error;
    return r.finalOutput;
  },

  async langchain() {
    const { ChatOpenAI } = await import('@langchain/openai');
    const llm = new ChatOpenAI({ model, useResponsesApi: api === 'responses', ...clientOptions });
    begin();
    const text = (m) => (typeof m.content === 'string' ? m.content : m.content.filter((p) => p.type === 'text').map((p) => p.text).join(''));
    if (!stream) {
      const m = await llm.invoke(prompt, { signal });
      finish = m.response_metadata?.finish_reason ?? m.response_metadata?.status;
      return text(m);
    }
    const st = await llm.stream(prompt, { signal });
    stage = 'stream';
    for await (const chunk of st) {
      partial += text(chunk);
      finish = chunk.response_metadata?.finish_reason ?? chunk.response_metadata?.status ?? finish;
    }
    return partial;
  },

  async vercel() {
    const { generateText, streamText } = await import('ai');
    const { createOpenAI } = await import('@ai-sdk/openai');
    const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
    const m = api === 'chat' ? openai.chat(model) : openai.responses(model);
    begin();
    const params = { model: m, prompt, abortSignal: signal, ...clientOptions };
    if (!stream) {
      const r = await generateText(params);
      finish = r.finishReason;
      return r.text;
    }
    const r = streamText({ ...params, onError: () => {} });
    stage = 'textStream';
    for await (const t of r.textStream) partial += t;
    stage = 'finishReason';
    finish = await r.finishReason;
    stage = 'text';
    return await r.text;
  },
};

// describe is an error as the caller sees it: its class, and what it carries.
function describe(e, depth = 0) {
  if (e === null || typeof e !== 'object') return { class: typeof e, message: String(e) };
  const d = { class: e.constructor?.name, name: e.name, message: String(e.message ?? '').slice(0, 300) };
  for (const k of ['status', 'statusCode', 'code', 'reason', 'isRetryable', 'lc_error_code']) {
    if (e[k] !== undefined && typeof e[k] !== 'object') d[k] = e[k];
  }
  if (depth < 2 && e.cause) d.cause = describe(e.cause, depth + 1);
  if (depth < 1 && Array.isArray(e.errors)) d.errors = e.errors.map((x) => describe(x, depth + 1));
  return d;
}

const out = {};
try {
  out.text = await calls[sdk]();
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = describe(e);
  out.stage = stage;
}
out.elapsed_ms = Date.now() - start;
if (finish !== undefined) out.finish = finish;
if (!out.ok) out.partial = partial;
print(out);
