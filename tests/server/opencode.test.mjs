// OpenCode (npm opencode-ai) runs a full agent turn against keel serve through an openai-compatible provider set
// in its config file. A recording proxy between them keeps what OpenCode sent, to check this is the workload of
// the bug reports: a long system prompt, about ten tool schemas, max_tokens 32000. The model is the parrot in
// text mode: its reply is one known sentence, so the turn ends without tool calls.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { startKeel, parrotModel, freePort } from "./keel_server.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const opencodeBin = path.join(here, "node_modules", ".bin", "opencode");
let keel, proxy, proxyPort, expectText;
const requests = [];

before(async () => {
  const dir = parrotModel("text");
  expectText = JSON.parse(fs.readFileSync(path.join(dir, "parrot.json"), "utf8")).expect.content;
  keel = await startKeel(["--model", dir, "--ctx-size", "16384", "--jinja", "--alias", "repro", "--parallel", "1"]);
  // Forwards everything to keel, streaming the answers back; keeps each request's JSON body.
  proxyPort = await freePort();
  proxy = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (body.length) { try { requests.push({ path: req.url, json: JSON.parse(body) }); } catch {} }
      const up = http.request({ host: "127.0.0.1", port: keel.port, path: req.url, method: req.method,
                                headers: { ...req.headers, host: `127.0.0.1:${keel.port}` } }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on("error", (e) => { res.writeHead(502); res.end(String(e)); });
      up.end(body);
    });
  });
  await new Promise((r) => proxy.listen(proxyPort, "127.0.0.1", r));
});

after(async () => {
  proxy?.close();
  assert.equal(await keel?.stop(), 0);
});

test("opencode run completes an agent turn against keel", async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "keel-opencode-"));
  const work = path.join(home, "work");
  fs.mkdirSync(work);
  const config = path.join(home, "opencode.json");
  fs.writeFileSync(config, JSON.stringify({
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    provider: { keel: { npm: "@ai-sdk/openai-compatible", name: "keel",
                        options: { baseURL: `http://127.0.0.1:${proxyPort}/v1`, apiKey: "unused" },
                        models: { repro: { name: "repro" } } } },
    model: "keel/repro",
    small_model: "keel/repro",
  }));
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"),
                XDG_DATA_HOME: path.join(home, ".local/share"), XDG_CACHE_HOME: path.join(home, ".cache"),
                XDG_STATE_HOME: path.join(home, ".local/state"), OPENCODE_CONFIG: config,
                OPENCODE_DISABLE_AUTOUPDATE: "1" };
  const run = spawn(opencodeBin, ["run", "Say hello"], { cwd: work, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  run.stdout.on("data", (d) => (out += d));
  run.stderr.on("data", (d) => (err += d));
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => { run.kill("SIGKILL"); resolve("timeout"); }, 180000);
    run.on("exit", (c) => { clearTimeout(timer); resolve(c); });
  });
  fs.rmSync(home, { recursive: true, force: true });
  assert.equal(code, 0, `opencode failed:\n${out}\n${err}\nkeel:\n${keel.log()}`);
  assert.ok(out.includes(expectText), `the reply is shown: ${out}`);

  // The agent's request: the workload of the bug reports.
  const chats = requests.filter((r) => r.path.endsWith("/chat/completions"));
  const agent = chats.find((r) => (r.json.tools ?? []).length > 0);
  assert.ok(agent, `an agent request with tools among ${chats.length}`);
  const system = agent.json.messages.find((m) => m.role === "system");
  const systemText = typeof system.content === "string" ? system.content
                                                        : system.content.map((p) => p.text ?? "").join("");
  assert.ok(systemText.length > 5000, `system prompt ${systemText.length} chars`);
  assert.ok(agent.json.tools.length >= 8, `${agent.json.tools.length} tools`);
  assert.equal(agent.json.max_tokens, 32000);
  assert.ok(JSON.stringify(agent.json.tools).length > 10000);
  console.log(`opencode sent ${chats.length} chat requests; the agent's: system prompt ${systemText.length} chars, ` +
              `${agent.json.tools.length} tools (${JSON.stringify(agent.json.tools).length} chars), ` +
              `max_tokens ${agent.json.max_tokens}, stream ${agent.json.stream}`);
  // keel answered every request it was sent, with no error.
  assert.match(keel.log(), /prompt \d{4,} tokens, max_tokens 32000/);
  assert.doesNotMatch(keel.log(), /failed/);
});
