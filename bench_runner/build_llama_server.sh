#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` and `llama-bench` once per version and flags, and
# install them into a bin folder (default: .venv/bin). The source is the llama.cpp tree that
# llama-cpp-python's sdist vendors (vendor/llama.cpp), fetched from the package index and
# checked against a pinned sha256, so a machine that reaches PyPI builds it with nothing else
# (and cmake and a C++ compiler). scripts/setup.sh runs it for a checkout, `otelbench model
# setup` for an installed otelbench (it ships inside the package).
#
#   bench_runner/build_llama_server.sh [BIN_DIR]
#
# Portable (-DGGML_NATIVE=OFF: any x86-64 CPU with AVX2; on a host with AMX, ggml's AMX
# kernels crashed on the embedded model's Q4_1 weights), static (the binaries copy anywhere),
# no libcurl (models are files here). CMAKE_ARGS adds your own flags (a GPU build: -DGGML_CUDA=ON)
# and makes a cache entry of its own. ~4-6 min on 2 cores the first time, then a copy.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN_DIR=${1:-.venv/bin}

VERSION=0.3.36
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
URL="https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-$VERSION.tar.gz"
FLAGS="-DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}"
KEY="$VERSION-$(printf %s "$FLAGS" | sha1sum | cut -c1-12)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/otelbench/llama.cpp"
OUT="$CACHE/$KEY"

if [ ! -x "$OUT/llama-server" ] || [ ! -x "$OUT/llama-bench" ]; then
  mkdir -p "$CACHE"
  WORK=$(mktemp -d "$CACHE/build.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  SDIST="$CACHE/llama_cpp_python-$VERSION.tar.gz"
  if ! echo "$SHA256  $SDIST" | sha256sum -c --status 2>/dev/null; then
    echo "setup: downloading llama.cpp (llama-cpp-python $VERSION sdist, 76 MB)" >&2
    curl -fsSL --retry 3 -o "$SDIST.part" "$URL"
    echo "$SHA256  $SDIST.part" | sha256sum -c --status || { echo "setup: sha256 mismatch for $URL" >&2; exit 1; }
    mv "$SDIST.part" "$SDIST"
  fi
  tar -xzf "$SDIST" -C "$WORK" --strip-components=3 "llama_cpp_python-$VERSION/vendor/llama.cpp"
  echo "setup: compiling llama-server and llama-bench ($KEY; a few minutes, once)" >&2
  # shellcheck disable=SC2086 # FLAGS is a list of words
  cmake -S "$WORK" -B "$WORK/build" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
    $FLAGS >"$WORK/cmake.log" 2>&1 || { tail -30 "$WORK/cmake.log" >&2; exit 1; }
  cmake --build "$WORK/build" --target llama-server llama-bench -j "$(nproc)" >"$WORK/build.log" 2>&1 \
    || { tail -40 "$WORK/build.log" >&2; exit 1; }
  mkdir -p "$OUT.tmp"
  cp "$WORK/build/bin/llama-server" "$WORK/build/bin/llama-bench" "$OUT.tmp/"
  echo "$FLAGS" >"$OUT.tmp/FLAGS"
  rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
fi
mkdir -p "$BIN_DIR"
install -m 755 "$OUT/llama-server" "$OUT/llama-bench" "$BIN_DIR/"
