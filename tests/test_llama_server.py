"""bench_runner.llama_server against llama.cpp's real llama-server and the real embedded model."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from otelbench.bench_runner.llama_server import (
    EMBEDDED_MODEL_FILE,
    LlamaServer,
    LlamaServerError,
    LlamaServerMissing,
    find_embedded_model,
    find_llama_server,
    model_name,
)

pytestmark = pytest.mark.model


def _installed() -> bool:
    try:
        find_llama_server()
    except LlamaServerMissing:
        return False
    return True


needs_llama_cpp = pytest.mark.skipif(not _installed(), reason="llama-server is not installed (scripts/setup.sh)")

REPO = Path(__file__).resolve().parents[1]


def _stdout_lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The child's stdout lines, read by a thread, so a test can wait with a timeout."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")  # EOF

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next_line(lines: queue.Queue[str], proc: subprocess.Popen[str], timeout_s: float = 120) -> str:
    try:
        line = lines.get(timeout=timeout_s)
    except queue.Empty:
        pytest.fail(f"no output within {timeout_s}s")
    if not line:
        pytest.fail(f"exited with {proc.wait()}: {proc.stderr.read() if proc.stderr else ''}")
    return line


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_find_embedded_model() -> None:
    path = find_embedded_model()
    assert path.name == EMBEDDED_MODEL_FILE
    assert path.stat().st_size > 50_000_000


def test_the_model_id_is_a_name_and_props_give_the_file(llama_server: LlamaServer) -> None:
    response = httpx.get(f"{llama_server.base_url}/models", timeout=5)
    assert response.status_code == 200
    ids = [m["id"] for m in response.json()["data"]]
    assert ids == [llama_server.model_id] == ["SmolLM2-135M-Instruct.Q4_1"]
    assert llama_server.base_url == f"http://127.0.0.1:{llama_server.port}/v1"
    props = httpx.get(f"{llama_server.root_url}/props", timeout=5).json()
    assert props["model_path"] == str(llama_server.model_path)
    assert props["total_slots"] == llama_server.parallel == 4


def test_slots_decode_at_once_and_logprobs_come_natively(llama_server: LlamaServer) -> None:
    """Four requests at once each get a slot of their own (the server's /slots sees them
    all busy together), and top logprobs come back for every generated token."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(i: int) -> dict:
        return httpx.post(f"{llama_server.base_url}/chat/completions", timeout=120, json={
            "model": llama_server.model_id, "max_tokens": 24, "temperature": 0, "logprobs": True, "top_logprobs": 5,
            "messages": [{"role": "user", "content": f"Write a short poem about the number {i}."}]}).json()

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(ask, range(4)))
    for answer in answers:
        content = answer["choices"][0]["logprobs"]["content"]
        assert len(content) == answer["usage"]["completion_tokens"] > 0
        assert all(len(item["top_logprobs"]) == 5 for item in content)
        assert answer["timings"]["predicted_n"] == answer["usage"]["completion_tokens"]
    metrics = httpx.get(f"{llama_server.root_url}/metrics", timeout=5).text
    assert "llamacpp:tokens_predicted_total" in metrics


def test_chat_completion_returns_text(llama_server: LlamaServer) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=llama_server.base_url, api_key="none", max_retries=0)
    completion = client.chat.completions.create(
        model=llama_server.model_id,
        messages=[{"role": "user", "content": "Name one colour of the rainbow."}],
        max_tokens=16,
        temperature=0,
    )
    choice = completion.choices[0]
    assert choice.message.content and choice.message.content.strip()
    assert choice.finish_reason in {"stop", "length"}
    assert completion.usage is not None and completion.usage.completion_tokens > 0


def test_streamed_chat_completion_ends_with_a_finish_reason(llama_server: LlamaServer) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=llama_server.base_url, api_key="none", max_retries=0)
    stream = client.chat.completions.create(
        model=llama_server.model_id,
        messages=[{"role": "user", "content": "Count to five."}],
        max_tokens=16,
        temperature=0,
        stream=True,
    )
    text, finish = [], None
    for chunk in stream:
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    assert "".join(text).strip()
    assert finish in {"stop", "length"}


@needs_llama_cpp
def test_stop_leaves_no_process_behind(tmp_path: Path) -> None:
    server = LlamaServer(log_path=tmp_path / "server.log")
    with server:
        pid = server.pid
        assert pid is not None and server.running
        assert os.getpgid(pid) == pid  # its own process group, not ours
        assert os.getpgid(pid) != os.getpgid(0)
    assert not server.running
    assert server._proc is not None and server._proc.returncode is not None
    assert not _group_alive(pid)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.base_url}/models", timeout=2)
    assert (tmp_path / "server.log").stat().st_size > 0  # output went to the log, not the terminal
    server.stop()  # idempotent


@needs_llama_cpp
def test_a_broken_model_fails_fast_with_the_log_tail(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file" * 100)
    server = LlamaServer(bad, log_path=tmp_path / "server.log", start_timeout_s=60)
    with pytest.raises(LlamaServerError, match="exited during startup") as info:
        server.start()
    assert str(tmp_path / "server.log") in str(info.value)
    assert not server.running
    assert not _group_alive(server.pid)


# Runs only the `model` command's own parser, so the test does not depend on the
# other sub-commands being importable.
_CLI = """
import argparse, sys
from otelbench.commands import model
parser = argparse.ArgumentParser(prog="otelbench")
model.add_parser(parser.add_subparsers(dest="command"))
args = parser.parse_args(sys.argv[1:])
sys.exit(args.func(args))
"""


@needs_llama_cpp
def test_model_serve_command_serves_until_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLI, "model", "serve"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        lines = _stdout_lines(proc)
        base_url = _next_line(lines, proc).split("base_url:", 1)[1].strip()
        model_id = _next_line(lines, proc).split("model:", 1)[1].strip()
        assert model_id == model_name(find_embedded_model()) and EMBEDDED_MODEL_FILE.startswith(model_id)
        response = httpx.get(f"{base_url}/models", timeout=5)
        assert response.json()["data"][0]["id"] == model_id
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{base_url}/models", timeout=2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_several_models_need_distinct_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"GGUF")
    b.write_bytes(b"GGUF")
    server = LlamaServer([a, b], n_ctx=2048, n_threads=1, binary="/bin/true")
    assert server.model_paths == (a, b) and server.model_path == a
    preset = server.preset()
    assert f"[a]\nmodel = {a}\nload-on-startup = true" in preset
    assert f"[b]\nmodel = {b}\nload-on-startup = false" in preset
    assert "ctx-size = 2048" in preset and "threads = 1" in preset and "kv-unified = true" in preset
    with pytest.raises(LlamaServerError, match="written by start"):
        server.command()
    with pytest.raises(ValueError, match="twice"):
        LlamaServer([a, a])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a.gguf").write_bytes(b"GGUF")
    with pytest.raises(ValueError, match="share a name"):
        LlamaServer([a, tmp_path / "other" / "a.gguf"])
    with pytest.raises(ValueError, match="at least one"):
        LlamaServer([])


def test_a_missing_binary_is_named_with_the_way_to_build_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTELBENCH_LLAMA_SERVER", str(tmp_path / "nowhere"))
    with pytest.raises(LlamaServerMissing, match="OTELBENCH_LLAMA_SERVER"):
        LlamaServer(log_path=tmp_path / "server.log").start()
    assert not (tmp_path / "server.log").exists()


@needs_llama_cpp
def test_one_server_swaps_between_several_models(tmp_path: Path) -> None:
    from otelbench.bench_runner import servers

    second = tmp_path / "second-name.gguf"  # the same weights under another name: a second model id
    second.symlink_to(find_embedded_model())
    with LlamaServer([find_embedded_model(), second], log_path=tmp_path / "server.log") as server:
        assert server.model_ids == ("SmolLM2-135M-Instruct.Q4_1", "second-name")
        assert server.preset_path is not None and server.preset_path.is_file()
        for model in reversed(server.model_ids):  # the second is loaded on demand, replacing the first
            response = httpx.post(f"{server.base_url}/chat/completions", timeout=60, json={
                "model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
            assert response.status_code == 200 and response.json()["model"] == model
            info = servers.probe(server.base_url)
            assert [m.id for m in info.models if m.loaded] == [model]  # one model in memory at a time
        assert info.kind == "llama_cpp"
        assert info.paths_for(server.model_ids[0]) == (str(find_embedded_model()),)
        assert info.paths_for("second-name") == (str(second),)
        assert servers.unload(info, "SmolLM2-135M-Instruct.Q4_1") == "unloaded (llama-server router API)"
    assert not server.preset_path.exists()


@needs_llama_cpp
def test_model_serve_takes_several_models(tmp_path: Path) -> None:
    second = tmp_path / "second-name.gguf"
    second.symlink_to(find_embedded_model())
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLI, "model", "serve", "--model", str(find_embedded_model()), "--model", str(second)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        lines = _stdout_lines(proc)
        base_url = _next_line(lines, proc).split("base_url:", 1)[1].strip()
        ids = [_next_line(lines, proc).split("model:", 1)[1].strip() for _ in range(2)]
        assert ids == ["SmolLM2-135M-Instruct.Q4_1", "second-name"]
        assert [m["id"] for m in httpx.get(f"{base_url}/models", timeout=5).json()["data"]] == ids
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
