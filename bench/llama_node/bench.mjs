#!/usr/bin/env node
// llama.cpp's prefill and decode speed through node-llama-cpp's prebuilt libraries (nothing is built), in the
// rows of `keel bench`: for each prompt length N, prefill N random token ids into an empty context, then decode G
// tokens one at a time after those N (llama-bench's `-p N -n 0` and `-p 0 -n G -d N` in one pass).
//
//   node bench/llama_node/bench.mjs --model MODEL.gguf --threads 2 --prompt-lengths 512,2048 --gen 16 [--json F]
//
// What runs: LlamaModel and LlamaContext are made through node-llama-cpp's API (so its prebuilt binary and the
// matching ggml CPU variant are chosen as for any user), but the timed work calls the native context directly
// (AddonContext initBatch / addToBatch / decodeBatch: llama_batch + llama_decode on a worker thread), not the
// sequence/evaluate layer, so no JS batching, sampling or token bookkeeping is timed. Left in the timed figures:
// one N-API call and one promise resolution per llama_decode (one per --ubatch tokens of prefill, one per decoded
// token); llama.cpp's own perf counters (llama_perf_context, printed as `timings`) are reported beside the wall
// clock so that overhead is visible.
//
// As llama-bench: batches of --ubatch tokens (node-llama-cpp sets n_ubatch = n_batch; llama-bench's defaults
// are n_batch 2048, n_ubatch 512, so the same ubatches reach the graph), f16 KV cache, flash attention "auto",
// random ids, one warm-up (ubatch prefill + one token) before the timed pass, logits of the last token of each
// batch only. Decode feeds a random id per step (llama-bench does too); no sampling is timed.
import fs from "node:fs";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

function parseArgs(argv) {
  const a = { model: "", threads: 2, lengths: [512], gen: 16, ubatch: 512, seed: 1, json: "", flashAttn: "auto",
              verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = () => argv[++i];
    if (k === "--model" || k === "-m") a.model = v();
    else if (k === "--threads" || k === "-t") a.threads = Number(v());
    else if (k === "--prompt-lengths") a.lengths = v().split(",").map(Number);
    else if (k === "--gen") a.gen = Number(v());
    else if (k === "--ubatch") a.ubatch = Number(v());
    else if (k === "--seed") a.seed = Number(v());
    else if (k === "--json") a.json = v();
    else if (k === "--flash-attn") a.flashAttn = v() === "auto" ? "auto" : argv[i] === "on";
    else if (k === "--verbose") a.verbose = true;
    else throw new Error(`bench.mjs: unknown argument ${k}`);
  }
  if (!a.model) throw new Error("bench.mjs: --model MODEL.gguf is required");
  return a;
}

// llama-bench uses std::rand() % n_vocab; any uniform ids do (random weights: the ids only pick embedding rows)
function makeRng(seed) {
  let s = BigInt(seed) * 6364136223846793005n + 1442695040888963407n;
  return (n) => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number((s >> 33n) % BigInt(n));
  };
}

function vmKiB(field) {
  const m = fs.readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return m ? Number(m[1]) : 0;
}

const args = parseArgs(process.argv.slice(2));
const log = [];
const llama = await getLlama({
  gpu: false, build: "never", usePrebuiltBinaries: true, progressLogs: false, maxThreads: args.threads,
  logLevel: LlamaLogLevel.debug,
  logger: (level, message) => {
    log.push(`${level}: ${message.replace(/\n$/, "")}`);
    if (args.verbose) process.stderr.write(`${level}: ${message}`);
  },
});
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0, useMmap: true });
const nVocab = model.fileInsights.vocabularySize ?? model.fileInfo.metadata?.[model.fileInfo.metadata.general.architecture]?.vocab_size;
if (!nVocab) throw new Error("bench.mjs: cannot read the vocabulary size from the GGUF");
const rand = makeRng(args.seed);
const ids = (n) => Uint32Array.from({ length: n }, () => rand(nVocab));

async function decode(ctx, pos, tokens) {
  // one llama_decode of tokens at positions pos.., logits of the last token only
  ctx.initBatch(tokens.length);
  ctx.addToBatch(0, pos, tokens, Uint32Array.of(tokens.length - 1));
  await ctx.decodeBatch();
}

async function prefill(ctx, n) {
  for (let done = 0; done < n;) {
    const k = Math.min(args.ubatch, n - done);
    await decode(ctx, done, ids(k));
    done += k;
  }
}

const rows = [];
for (const n of args.lengths) {
  const context = await model.createContext({
    contextSize: n + args.gen + 1, batchSize: args.ubatch, sequences: 1, threads: args.threads,
    flashAttention: args.flashAttn, performanceTracking: true, ignoreMemorySafetyChecks: true,
  });
  const ctx = context._ctx; // the native AddonContext (node-llama-cpp 3.22.1, pinned in package.json)
  ctx.setThreads(args.threads);
  // warm-up as llama-bench's: one ubatch of prompt and one token, then an empty cache again
  await prefill(ctx, Math.min(args.ubatch, n));
  await decode(ctx, Math.min(args.ubatch, n), ids(1));
  ctx.removeTokenCellsFromSequence(0, 0, -1);
  const t0 = process.hrtime.bigint();
  await prefill(ctx, n);
  const t1 = process.hrtime.bigint();
  for (let i = 0; i < args.gen; i++) await decode(ctx, n + i, ids(1));
  const t2 = process.hrtime.bigint();
  const prefillS = Number(t1 - t0) / 1e9, decodeS = Number(t2 - t1) / 1e9;
  rows.push({
    prompt_tokens: n, gen_tokens: args.gen,
    prefill_tok_s: n / prefillS, decode_tok_s: args.gen > 0 ? args.gen / decodeS : 0,
    prefill_s: prefillS, decode_s: decodeS, threads_used: ctx.getThreads(),
    process_peak_bytes: vmKiB("VmHWM") * 1024, process_rss_bytes: vmKiB("VmRSS") * 1024,
  });
  ctx.printTimings(); // llama_perf_context_print: llama.cpp's own prompt-eval / eval times, into the log
  await context.dispose();
}

// the log lines that show what ran: the CPU variant loaded, the weights' types, the context's batch and flash
// attention, whether weights were repacked, the KV cache, and llama.cpp's own timings of each pass
const wanted = /load_backend|llama_model_loader: - type|file type|model params|CPU_REPACK|n_ctx  |n_batch|n_ubatch|flash_attn|llama_kv_cache: +size|llama_kv_cache: +CPU|compute buffer size =|[Ff]lash [Aa]ttention|llama_perf_context_print: +(prompt eval|eval) time/;
const out = {
  engine: "llama.cpp via node-llama-cpp",
  node_llama_cpp: JSON.parse(fs.readFileSync(new URL("./node_modules/node-llama-cpp/package.json", import.meta.url))).version,
  llama_cpp_release: JSON.parse(fs.readFileSync(new URL("./node_modules/node-llama-cpp/llama/llama.cpp.info.json", import.meta.url))).tag,
  build: llama.buildType, cpu_backend: log.filter((l) => /load_backend/.test(l)),
  model: args.model, threads: args.threads, ubatch: args.ubatch, flash_attn: args.flashAttn, vocab: nVocab,
  rows,
  log: log.filter((l) => wanted.test(l)),
};
const text = JSON.stringify(out, null, 1);
if (args.json) fs.writeFileSync(args.json, text);
else process.stdout.write(text + "\n");
await model.dispose();
await llama.dispose();
