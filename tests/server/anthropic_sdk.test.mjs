// The official @anthropic-ai/sdk npm package against keel serve's Messages API: non-streaming and streaming
// give the same message (the SDK accumulates the stream's events itself), count_tokens is the prompt the
// messages call prefilled, a second turn reads the prompt cache, tool use comes back as parsed tool_use blocks
// (streamed as input_json_delta), and errors arrive as the SDK's typed classes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { startKeel, parrotModel, sourceDir } from "./keel_server.mjs";

let textServer, toolServer, text, tool, parrotExpect;
const key = "sdk-key";

before(async () => {
  textServer = await startKeel(["--model", path.join(sourceDir, "models", "keel-brown-nemotron-h-8m"),
                                "--ctx-size", "1024", "--alias", "brown"]);
  const dir = parrotModel("tool");
  parrotExpect = JSON.parse(fs.readFileSync(path.join(dir, "parrot.json"), "utf8")).expect;
  toolServer = await startKeel(["--model", dir, "--ctx-size", "4096", "--alias", "parrot", "--api-key", key]);
  text = new Anthropic({ baseURL: textServer.base, apiKey: "unused", maxRetries: 0 });
  tool = new Anthropic({ baseURL: toolServer.base, apiKey: key, maxRetries: 0 });
});

after(async () => {
  assert.equal(await textServer?.stop(), 0);
  assert.equal(await toolServer?.stop(), 0);
});

const question = [{ role: "user", content: "What did the jury say about the election?" }];
const weather = [{ name: "get_weather", description: "Weather forecast for a city",
                   input_schema: { type: "object", properties: { city: { type: "string" },
                                                                 days: { type: "integer" } },
                                   required: ["city"] } }];

test("non-streaming and streaming give the same message", async () => {
  const params = { model: "claude-anything", max_tokens: 24, temperature: 0, system: "You answer briefly.",
                   messages: question };
  const whole = await text.messages.create(params);
  assert.equal(whole.type, "message");
  assert.equal(whole.role, "assistant");
  assert.equal(whole.model, "claude-anything");
  assert.equal(whole.content.length, 1);
  assert.equal(whole.content[0].type, "text");
  assert.ok(whole.content[0].text.length > 0);
  assert.ok(["end_turn", "max_tokens"].includes(whole.stop_reason), whole.stop_reason);
  assert.ok(whole.usage.output_tokens > 0 && whole.usage.output_tokens <= 24);

  const seen = [];
  const stream = text.messages.stream(params);
  stream.on("streamEvent", (e) => seen.push(e.type));
  const streamed = await stream.finalMessage();
  assert.equal(streamed.content[0].text, whole.content[0].text);
  assert.equal(streamed.stop_reason, whole.stop_reason);
  assert.equal(streamed.usage.output_tokens, whole.usage.output_tokens);
  assert.equal(seen[0], "message_start");
  assert.equal(seen[seen.length - 1], "message_stop");
  assert.equal(seen[seen.length - 2], "message_delta");

  // The same prompt again: all but the last token comes from the cache (input_tokens are the uncached part).
  const prompt = whole.usage.input_tokens + whole.usage.cache_read_input_tokens;
  assert.ok(streamed.usage.cache_read_input_tokens > 0, JSON.stringify(streamed.usage));
  assert.equal(streamed.usage.input_tokens + streamed.usage.cache_read_input_tokens, prompt);

  // count_tokens: the prompt the messages call prefilled.
  const counted = await text.messages.countTokens({ model: "claude-anything", system: params.system,
                                                    messages: question });
  assert.equal(counted.input_tokens, prompt);
});

test("stop_sequences end the message with stop_reason stop_sequence", async () => {
  const whole = await text.messages.create({ model: "m", max_tokens: 40, temperature: 0, messages: question });
  const words = whole.content[0].text.trim().split(/\s+/);
  assert.ok(words.length >= 3, whole.content[0].text);
  const stop = words[2];
  const cut = await text.messages.create({ model: "m", max_tokens: 40, temperature: 0, messages: question,
                                           stop_sequences: [stop] });
  assert.equal(cut.stop_reason, "stop_sequence");
  assert.equal(cut.stop_sequence, stop);
  assert.ok(!cut.content[0].text.includes(stop));
  assert.ok(whole.content[0].text.startsWith(cut.content[0].text));
});

test("tool use: thinking and a parsed tool_use block, in messages and in the stream", async () => {
  const params = { model: "parrot", max_tokens: 200, tools: weather, messages: [
    { role: "user", content: "Weather in Paris for three days?" }] };
  const whole = await tool.messages.create(params);
  assert.equal(whole.stop_reason, "tool_use");
  assert.deepEqual(whole.content.map((b) => b.type), ["thinking", "tool_use"]);
  assert.equal(whole.content[0].thinking, parrotExpect.reasoning_content);
  assert.equal(whole.content[1].name, parrotExpect.tool_calls[0].name);
  assert.deepEqual(whole.content[1].input, parrotExpect.tool_calls[0].arguments);

  const partial = [];
  const stream = tool.messages.stream(params);
  stream.on("inputJson", (delta) => partial.push(delta));
  const streamed = await stream.finalMessage();
  assert.deepEqual(streamed.content.map((b) => b.type), ["thinking", "tool_use"]);
  assert.equal(streamed.content[0].thinking, parrotExpect.reasoning_content);
  assert.deepEqual(streamed.content[1].input, parrotExpect.tool_calls[0].arguments);
  assert.deepEqual(JSON.parse(partial.join("")), parrotExpect.tool_calls[0].arguments);
  assert.equal(streamed.stop_reason, "tool_use");

  // The result goes back; the conversation with tool_use and tool_result blocks is accepted.
  const next = await tool.messages.create({ ...params, messages: [
    ...params.messages,
    { role: "assistant", content: whole.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: whole.content[1].id,
                                content: [{ type: "text", text: "sunny, 21 C" }] }] }] });
  assert.equal(next.type, "message");
  assert.ok(next.usage.cache_read_input_tokens > 0, JSON.stringify(next.usage));
});

test("errors are the SDK's typed errors, in Anthropic's shape", async () => {
  const wrong = new Anthropic({ baseURL: toolServer.base, apiKey: "not-the-key", maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: "m", max_tokens: 5, messages: question }), (e) => {
    assert.ok(e instanceof Anthropic.AuthenticationError, e.constructor.name);
    assert.equal(e.status, 401);
    assert.equal(e.error.type, "error");
    assert.equal(e.error.error.type, "authentication_error");
    return true;
  });
  // Claude Code's ANTHROPIC_AUTH_TOKEN sends the key as a bearer token.
  const bearer = new Anthropic({ baseURL: toolServer.base, apiKey: null, authToken: key, maxRetries: 0 });
  const ok = await bearer.messages.create({ model: "m", max_tokens: 5, messages: question });
  assert.equal(ok.type, "message");

  await assert.rejects(tool.messages.create({ model: "m", max_tokens: 5, messages: [{ role: "user", content: [
    { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }] }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
    assert.equal(e.error.error.type, "invalid_request_error");
    assert.match(e.error.error.message, /image/);
    return true;
  });

  // A prompt longer than the context: the message Claude Code matches to compact its history.
  const long = "word ".repeat(6000);
  await assert.rejects(tool.messages.create({ model: "m", max_tokens: 5, messages: [
    { role: "user", content: long }] }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
    assert.match(e.error.error.message, /^prompt is too long: \d+ tokens > 4095 maximum$/);
    return true;
  });

  await assert.rejects(tool.messages.create({ model: "m", messages: question, max_tokens: 5, top_p: 7 }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError);
    assert.match(e.error.error.message, /top_p/);
    return true;
  });
  await assert.rejects(tool.models.retrieve("nothing-here"), (e) => e instanceof Anthropic.NotFoundError);
});
