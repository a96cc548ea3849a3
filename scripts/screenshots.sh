#!/usr/bin/env bash
# Regenerate docs/screenshots/*.png, the README's pictures of the web UI: the browser tests
# (tests/web/test_browser.py) save a screenshot of each page they check into
# $OTELBENCH_SCREENSHOTS, from the lake they write with the real collector.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/docs/screenshots"
mkdir -p "$out"
OTELBENCH_SCREENSHOTS="$out" "${PYTHON:-.venv/bin/python}" -m pytest -q -p no:cacheprovider \
  tests/web/test_browser.py "$@"
ls -l "$out"/*.png
