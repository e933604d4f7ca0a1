// Claude Code itself (npm @anthropic-ai/claude-code, pinned; its native binary comes from the npm registry) runs
// `claude -p` against keel serve through ANTHROPIC_BASE_URL, with HOME in a fresh folder and its non-essential
// traffic off. A recording proxy between them keeps every request and response, to check what Claude Code sent
// (the Messages API with ?beta=true, a billing-header system block, ~20K tokens of tools) and what keel answered.
//   - text parrot: a turn completes and its reply is printed; `claude -p -c` (a second turn of the same session)
//     reports cache_read_input_tokens > 0 and prefills only the new part.
//   - bash parrot: the model calls Claude Code's Bash tool; Claude Code runs it (the file appears) and sends the
//     tool_result back under the tool_use's id.
//   - the bundled model at --ctx-size 4096, smaller than Claude Code's first prompt: keel's 400 "prompt is too
//     long: N tokens > 4095 maximum" is recognised by Claude Code, which reports its own "Prompt is too long"
//     with keel's limit (not a generic API error).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { startKeel, parrotModel, freePort } from "./keel_server.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const claudeBin = path.join(here, "node_modules", ".bin", "claude");
const apiKey = "keel-test-key";

// Forwards to `target`, keeping {path, headers, json, response} of each request with a body.
async function recordingProxy(target) {
  const port = await freePort();
  const records = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const rec = { path: req.url, headers: req.headers, json: null, status: 0, response: "" };
      if (body.length) { try { rec.json = JSON.parse(body); } catch {} }
      records.push(rec);
      const up = http.request({ host: "127.0.0.1", port: target.port, path: req.url, method: req.method,
                                headers: { ...req.headers, host: `127.0.0.1:${target.port}` } }, (r) => {
        rec.status = r.statusCode;
        res.writeHead(r.statusCode, r.headers);
        r.on("data", (d) => { rec.response += d; res.write(d); });
        r.on("end", () => res.end());
      });
      up.on("error", (e) => { res.writeHead(502); res.end(String(e)); });
      up.end(body);
    });
  });
  await new Promise((r) => server.listen(port, "127.0.0.1", r));
  return { port, records, close: () => server.close() };
}

// The SSE events of a recorded streaming response, as objects.
function events(rec) {
  return rec.response.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
}

function claude(args, { home, cwd, port }) {
  const env = { ...process.env, HOME: home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
                DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1", ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
                ANTHROPIC_API_KEY: apiKey };
  delete env.ANTHROPIC_AUTH_TOKEN;
  const run = spawn(claudeBin, ["-p", ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  run.stdout.on("data", (d) => (out += d));
  run.stderr.on("data", (d) => (err += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => { run.kill("SIGKILL"); resolve({ code: "timeout", out, err }); }, 240000);
    run.on("exit", (code) => { clearTimeout(timer); resolve({ code, out, err }); });
  });
}

function newHome(tag) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `keel-claude-${tag}-`));
  fs.mkdirSync(path.join(home, "work"));
  return { home, cwd: path.join(home, "work") };
}

const messagesOf = (records) => records.filter((r) => r.path.startsWith("/v1/messages") &&
                                                      !r.path.startsWith("/v1/messages/count_tokens"));
const agentTurns = (records) => messagesOf(records).filter((r) => (r.json?.tools ?? []).length > 0);

let textKeel, bashKeel, smallKeel, textProxy, bashProxy, expectText;

before(async () => {
  const textDir = parrotModel("text");
  expectText = JSON.parse(fs.readFileSync(path.join(textDir, "parrot.json"), "utf8")).expect.content;
  const args = ["--ctx-size", "65536", "--alias", "parrot", "--api-key", apiKey];
  textKeel = await startKeel(["--model", textDir, ...args]);
  bashKeel = await startKeel(["--model", parrotModel("bash"), ...args]);
  smallKeel = await startKeel(["--ctx-size", "4096", "--api-key", apiKey]);  // the bundled model
  textProxy = await recordingProxy(textKeel);
  bashProxy = await recordingProxy(bashKeel);
});

after(async () => {
  textProxy?.close();
  bashProxy?.close();
  assert.equal(await textKeel?.stop(), 0);
  assert.equal(await bashKeel?.stop(), 0);
  assert.equal(await smallKeel?.stop(), 0);
});

test("claude -p completes a turn, and the next turn of the session hits the prompt cache", async () => {
  const where = { ...newHome("text"), port: textProxy.port };
  const first = await claude(["Say hello"], where);
  assert.equal(first.code, 0, `claude failed:\n${first.out}\n${first.err}\nkeel:\n${textKeel.log()}`);
  assert.ok(first.out.includes(expectText), `the reply is printed: ${first.out}`);

  const turns = agentTurns(textProxy.records);
  assert.ok(turns.length >= 1, `an agent request among ${textProxy.records.map((r) => r.path)}`);
  const one = turns[turns.length - 1];
  // What Claude Code sends: the Messages API, beta query, its headers, the billing block first, the tools.
  assert.match(one.path, /^\/v1\/messages\?beta=true$/);
  assert.equal(one.headers["anthropic-version"], "2023-06-01");
  assert.equal(one.headers["x-api-key"], apiKey);
  assert.equal(one.json.stream, true);
  assert.ok(Array.isArray(one.json.system), "system is a list of blocks");
  assert.ok(one.json.system[0].text.startsWith("x-anthropic-billing-header:"), one.json.system[0].text);
  assert.ok(one.json.tools.length >= 8, `${one.json.tools.length} tools`);
  assert.equal(one.status, 200);
  const ev = events(one);
  assert.equal(ev[0].type, "message_start");
  assert.equal(ev[ev.length - 1].type, "message_stop");
  const delta = ev.find((e) => e.type === "message_delta");
  assert.equal(delta.delta.stop_reason, "end_turn");
  const firstUsage = ev[0].message.usage;
  console.log(`claude sent ${textProxy.records.length} requests; the agent turn: ${JSON.stringify(one.json).length} ` +
              `bytes, ${one.json.tools.length} tools, max_tokens ${one.json.max_tokens}, usage ` +
              JSON.stringify(firstUsage));

  const before = textProxy.records.length;
  const second = await claude(["-c", "Say it again"], where);
  fs.rmSync(where.home, { recursive: true, force: true });
  assert.equal(second.code, 0, `claude -c failed:\n${second.out}\n${second.err}\nkeel:\n${textKeel.log()}`);
  assert.ok(second.out.includes(expectText));
  const next = agentTurns(textProxy.records.slice(before));
  assert.ok(next.length >= 1);
  const turn2 = next[next.length - 1];
  assert.ok(turn2.json.messages.length > one.json.messages.length, "the second turn carries the first");
  const usage2 = events(turn2)[0].message.usage;
  const prompt2 = usage2.input_tokens + usage2.cache_read_input_tokens;
  // The cache holds the whole first conversation; only the new user turn (and the template's tail) prefills.
  assert.ok(usage2.cache_read_input_tokens > 0.9 * prompt2, `second turn usage ${JSON.stringify(usage2)}`);
  assert.ok(usage2.input_tokens < 200, `prefilled ${usage2.input_tokens} new tokens`);
  console.log(`second turn: usage ${JSON.stringify(usage2)}`);
  assert.doesNotMatch(textKeel.log(), /failed/);
});

test("a tool call from the model makes Claude Code run the tool and send the tool_result back", async () => {
  const where = { ...newHome("bash"), port: bashProxy.port };
  // The parrot calls Bash on every turn; two turns are the call and the answer to its result.
  const run = await claude(["--allowedTools", "Bash", "--max-turns", "2", "Write the file"], where);
  const file = path.join(where.cwd, "parrot.txt");
  const written = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
  fs.rmSync(where.home, { recursive: true, force: true });
  assert.equal(written, "parrot-was-here\n", `Bash ran: ${run.out}\n${run.err}\nkeel:\n${bashKeel.log()}`);
  assert.match(run.out + run.err, /max turns/i, "it stopped at --max-turns, not on an error");

  const turns = agentTurns(bashProxy.records);
  assert.ok(turns.length >= 2, `${turns.length} agent turns`);
  const [call, answer] = turns.slice(-2);
  const ev = events(call);
  const start = ev.find((e) => e.type === "content_block_start" && e.content_block.type === "tool_use");
  assert.equal(start.content_block.name, "Bash");
  const args = ev.filter((e) => e.type === "content_block_delta" && e.index === start.index)
                 .map((e) => e.delta.partial_json).join("");
  assert.equal(JSON.parse(args).command, "echo parrot-was-here > parrot.txt");
  assert.equal(ev.find((e) => e.type === "message_delta").delta.stop_reason, "tool_use");
  // The next request carries the assistant's tool_use and the user's tool_result for the same id.
  const last = answer.json.messages[answer.json.messages.length - 1];
  assert.equal(last.role, "user");
  const result = last.content.find((b) => b.type === "tool_result");
  assert.ok(result, JSON.stringify(last));
  assert.equal(result.tool_use_id, start.content_block.id);
  assert.ok(!result.is_error, JSON.stringify(result));
  // And that turn hit the cache too.
  const usage = events(answer)[0].message.usage;
  assert.ok(usage.cache_read_input_tokens > 0, JSON.stringify(usage));
});

test("a prompt longer than the context is the error Claude Code recognises", async () => {
  const where = { ...newHome("small"), port: smallKeel.port };
  const run = await claude(["Say hello"], where);
  fs.rmSync(where.home, { recursive: true, force: true });
  assert.notEqual(run.code, 0);
  // Claude Code parsed keel's message: its own wording, with the limit keel gave.
  assert.match(run.out + run.err, /Prompt is too long/, `${run.out}\n${run.err}`);
  assert.match(run.out + run.err, /limit 4095/, `${run.out}\n${run.err}`);
  assert.doesNotMatch(run.out + run.err, /API Error/);
});
