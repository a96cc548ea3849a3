"""The JavaScript SDK (sdk/js): its own tests under Node's runner (they start a real
collector with `otelbench serve` and read the lake with `otelbench sql`), the package as
npm packs and installs it, and its JSON text against the Python SDK's for the same values."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import otelbench.sdk as sdk
from otelbench.testing.serve import ROOT
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake

SDK_JS = ROOT / "sdk" / "js"
SETUP = "./scripts/setup.sh installs them (npm ci --prefix sdk/js)"


def node() -> str:
    found = shutil.which("node")
    assert found, f"Node.js 20 or newer is needed for the JavaScript SDK's tests; {SETUP}"
    assert (SDK_JS / "node_modules" / "@opentelemetry").is_dir(), f"sdk/js/node_modules is missing; {SETUP}"
    return found


def test_the_javascript_sdks_own_tests_pass() -> None:
    env = {**os.environ, "OTELBENCH_PYTHON": sys.executable}
    done = subprocess.run([node(), "--test", "sdk/js/test/"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"node --test sdk/js/test/ failed:\n{done.stdout}\n{done.stderr}"


INSTALLED = """
import { observe } from '@otelbench/sdk';
const agent = observe({ agent: 'packed', endpoint: process.argv[1] });
const answer = await agent.task('check', 'from the tarball', async (t) => { t.cost(0.5); return 'installed'; });
console.log(JSON.stringify({ answer, flushed: await agent.flush(), stats: agent.stats() }));
"""


@pytest.mark.slow
def test_the_packed_package_installs_into_a_project_and_sends_a_run(tmp_path: Path, collector) -> None:
    npm = shutil.which("npm")
    assert npm and node(), SETUP
    packed = subprocess.run([npm, "pack", "--json", "--pack-destination", str(tmp_path), str(SDK_JS)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    (tarball,) = json.loads(packed.stdout)
    files = {f["path"] for f in tarball["files"]}
    assert {"package.json", "index.js", "index.d.ts", "README.md", "src/export.js", "src/values.js"} <= files
    assert not any(f.startswith(("test/", "testing/", "node_modules/")) for f in files)
    project = tmp_path / "app"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "app", "private": True, "type": "module"}))
    subprocess.run([npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error",
                    str(tmp_path / tarball["filename"])], cwd=project, capture_output=True, text=True, timeout=300,
                   check=True)
    endpoint = f"http://127.0.0.1:{collector.http_port}"
    done = subprocess.run([node(), "--input-type=module", "-e", INSTALLED, endpoint], cwd=project,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"answer": "installed", "flushed": True, "stats": {
        "ended": 1, "exported": 1, "failed": 0, "dropped": 0, "ignored": 0}}
    lake = Path(collector.config.exporters.parquet.path)

    def run() -> Any:
        with open_lake(lake) as gw:
            rows = gw.query("SELECT agent, status, cost_usd, input, output FROM agent_runs", max_rows=None).rows
        return rows[0] if rows else None

    agent, status, cost, task_input, output = wait_for(run, what="the packed SDK's run")
    assert (agent, status, cost) == ("packed", "ok", 0.5)
    assert json.loads(task_input)[0]["parts"][0]["content"] == "from the tarball"
    assert json.loads(output)[0]["parts"][0]["content"] == "installed"


# -- the same values, the same text from both SDKs ---------------------------------------------

ECHO = """
import { createInterface } from 'node:readline';
const { attributes, messages, toJson } = await import(process.argv[1]);
for await (const line of createInterface({ input: process.stdin })) {
  const value = JSON.parse(line);
  console.log(JSON.stringify([toJson(value), messages('user', value), attributes({ k: value })]));
}
"""


@pytest.fixture(scope="module")
def js_values() -> Iterator[Any]:
    """The JS SDK's value functions in one Node process: a value in (a JSON line), its texts out."""
    values = (SDK_JS / "src" / "values.js").as_uri()
    proc = subprocess.Popen([node(), "--input-type=module", "-e", ECHO, values], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def ask(value: Any) -> list[Any]:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(value) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    yield ask
    proc.stdin.close()  # type: ignore[union-attr]
    proc.wait(timeout=10)


def _js_object_key(key: str) -> bool:
    """A key a JavaScript object keeps in insertion order: an array index ("0", "7") it
    moves first, whatever the order it was written in."""
    return not (key.isascii() and key.isdigit() and str(int(key)) == key and int(key) < 2**32 - 1)


# Integers only: floats are written differently by the two languages (Python's 1.0 and
# 1e-07, JavaScript's 1 and 1e-7).
SCALARS = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text().filter(_js_object_key), inner, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_a_value_reads_the_same_from_both_sdks(js_values, value: Any) -> None:
    as_json, as_messages, as_attributes = js_values(value)
    assert as_json == json.dumps(value, ensure_ascii=False)
    assert as_messages == sdk._messages("user", value)
    assert as_attributes == sdk._attributes({"k": value})
