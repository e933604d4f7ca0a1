#!/usr/bin/env bash
# Installs the Node client tests' packages (openai, opencode-ai, @anthropic-ai/sdk, @anthropic-ai/claude-code with
# its native binary; pinned in package-lock.json) into
# tests/server/node_modules for ctest. Offline-safe: does nothing when the installed tree matches the lockfile.
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.keel-lockfile
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp" && [ -x node_modules/.bin/opencode ] &&
   [ -f node_modules/openai/package.json ] && [ -x node_modules/.bin/claude ] &&
   [ -f node_modules/@anthropic-ai/sdk/package.json ]; then
  echo "npm: tests/server/node_modules already matches package-lock.json"
  exit 0
fi
npm install --no-audit --no-fund  # (npm ci refuses lockfiles without the other platforms' optional binaries)
# Claude Code's postinstall copies its native binary (from the platform's optional package) over the
# bin/claude.exe stub; an npm that holds install scripts back leaves the stub, so run it then.
claude_exe=node_modules/@anthropic-ai/claude-code/bin/claude.exe
if [ -f "$claude_exe" ] && [ "$(wc -c < "$claude_exe")" -lt 1000000 ]; then
  node node_modules/@anthropic-ai/claude-code/install.cjs
fi
cp package-lock.json "$stamp"
