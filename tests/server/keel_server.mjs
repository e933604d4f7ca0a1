// Starts `keel serve` for the Node client tests: a free port on 127.0.0.1, output kept for assertions, and the
// parrot models written by tools/make_parrot_model.py. KEEL_BIN and KEEL_BUILD_DIR come from ctest.
import { spawn, execFileSync } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const sourceDir = path.resolve(here, "..", "..");
const buildDir = process.env.KEEL_BUILD_DIR ?? path.join(sourceDir, "build");
const keelBin = process.env.KEEL_BIN ?? path.join(buildDir, "keel");

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

// The parrot model folder of `mode` ("tool" | "text") and what the API must return for it (parrot.json).
export function parrotModel(mode) {
  const dir = path.join(buildDir, "tests", "server", `node-parrot-${mode}`);
  execFileSync("python3", [path.join(sourceDir, "tools", "make_parrot_model.py"), dir, "--mode", mode]);
  return dir;
}

export async function startKeel(args) {
  const port = await freePort();
  const proc = spawn(keelBin, ["serve", ...args, "--host", "127.0.0.1", "--port", String(port)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve(code ?? signal)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`keel serve exited: ${output}`);
    try {
      const r = await fetch(`${base}/health`);
      if (r.status === 200) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`keel serve not ready: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    base,
    log: () => output,
    async stop() {
      proc.kill("SIGTERM");
      return await exited;
    },
  };
}
