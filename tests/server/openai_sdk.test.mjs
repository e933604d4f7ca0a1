// The official openai npm package (6.x: the last major that runs on Node 20) against keel serve: chat completions
// non-streaming and streaming agree, usage is reported (in the stream too, with include_usage), a second turn
// reports cached prompt tokens, and tool calls come back parsed — in messages and as streamed delta.tool_calls.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { startKeel, parrotModel, sourceDir } from "./keel_server.mjs";

let chatServer, toolServer, chatClient, toolClient, parrotExpect;

before(async () => {
  chatServer = await startKeel(["--model", path.join(sourceDir, "models", "keel-brown-nemotron-h-8m"),
                                "--ctx-size", "1024", "--alias", "brown", "--metrics"]);
  const dir = parrotModel("tool");
  parrotExpect = JSON.parse(fs.readFileSync(path.join(dir, "parrot.json"), "utf8")).expect;
  toolServer = await startKeel(["--model", dir, "--ctx-size", "4096", "--alias", "parrot"]);
  chatClient = new OpenAI({ baseURL: `${chatServer.base}/v1`, apiKey: "unused", maxRetries: 0 });
  toolClient = new OpenAI({ baseURL: `${toolServer.base}/v1`, apiKey: "unused", maxRetries: 0 });
});

after(async () => {
  assert.equal(await chatServer?.stop(), 0);
  assert.equal(await toolServer?.stop(), 0);
});

const question = [{ role: "user", content: "What did the jury say about the election?" }];

test("models lists the alias with its context", async () => {
  const models = await chatClient.models.list();
  assert.equal(models.data[0].id, "brown");
  assert.equal(models.data[0].context_length, 1024);
});

test("chat non-streaming and streaming give the same reply and usage", async () => {
  const params = { model: "brown", messages: question, temperature: 0, max_tokens: 24 };
  const whole = await chatClient.chat.completions.create(params);
  assert.equal(whole.object, "chat.completion");
  const reply = whole.choices[0].message.content ?? "";
  assert.ok(["stop", "length"].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.prompt_tokens > 5);
  assert.ok(whole.usage.completion_tokens >= 1 && whole.usage.completion_tokens <= 24);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);

  const stream = await chatClient.chat.completions.create({ ...params, stream: true,
                                                            stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? "";
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(text, reply);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
});

test("a second turn reports cached prompt tokens", async () => {
  // max_tokens at the context's size: both turns ask for a whole context of state, so the first turn's cached
  // state can serve the second.
  const first = await chatClient.chat.completions.create({ model: "brown", messages: question, temperature: 0,
                                                           max_tokens: 1024, stop: ["\n", "."] });
  const messages = [...question, { role: "assistant", content: first.choices[0].message.content ?? "" },
                    { role: "user", content: "And what happened next?" }];
  const second = await chatClient.chat.completions.create({ model: "brown", messages, temperature: 0,
                                                            max_tokens: 1024, stop: ["\n", "."] });
  const cached = second.usage.prompt_tokens_details?.cached_tokens ?? 0;
  assert.ok(cached > 0, `cached_tokens ${cached}`);
  assert.ok(cached < second.usage.prompt_tokens);
});

test("errors come back as the SDK's typed errors", async () => {
  await assert.rejects(chatClient.chat.completions.create({ model: "brown", messages: question, n: 2 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === "n");
  const tooLong = [{ role: "user", content: "word ".repeat(3000) }];
  await assert.rejects(chatClient.chat.completions.create({ model: "brown", messages: tooLong, max_tokens: 32000 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded");
});

const tools = [{ type: "function", function: { name: "get_weather", description: "Current weather",
  parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } },
                required: ["city"] } } }];

test("tool calls, non-streaming", async () => {
  const r = await toolClient.chat.completions.create({ model: "parrot", tools,
    messages: [{ role: "user", content: "Weather in Paris?" }] });
  const msg = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.equal(msg.reasoning_content, parrotExpect.reasoning_content);
  assert.equal(msg.tool_calls.length, 1);
  assert.equal(msg.tool_calls[0].function.name, parrotExpect.tool_calls[0].name);
  assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), parrotExpect.tool_calls[0].arguments);
});

test("tool calls, streaming (delta.tool_calls)", async () => {
  const stream = await toolClient.chat.completions.create({ model: "parrot", tools, stream: true,
    messages: [{ role: "user", content: "Weather in Paris?" }] });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const tc of choice.delta?.tool_calls ?? []) {
      calls[tc.index] ??= { id: "", name: "", arguments: "" };
      if (tc.id) calls[tc.index].id = tc.id;
      if (tc.function?.name) calls[tc.index].name += tc.function.name;
      calls[tc.index].arguments += tc.function?.arguments ?? "";
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1);
  assert.match(calls[0].id, /^call_/);
  assert.equal(calls[0].name, parrotExpect.tool_calls[0].name);
  assert.deepEqual(JSON.parse(calls[0].arguments), parrotExpect.tool_calls[0].arguments);
});
