"""The embedded model server: its memory through a working session, and the decode speed a
client sees against llama-bench's for the same model and threads.

    python benchmarks/embedded_server.py [--runs 7] [--threads N] [--server-args "-bs"]

``llama-server`` as every internal use starts it (``LlamaServer()``: 4 slots sharing an
8,192-token KV cache), then in order: one long prompt (~5,600 tokens), four logprobs
requests at once (top 20 alternatives for each of 64 tokens, ~1,300-token prompts), and
``--runs`` rounds of: one ``llama-bench`` tg128 (built beside ``llama-server`` by
scripts/setup.sh; the same model and thread count, while the server idles) and one
128-token stream timed by the bench's own client (``measure_run``, EOS ignored so every
stream is 128 tokens long). Alternating them puts both under the same moment's noise of
a shared VM (llama-bench alone moved between 95 and 130 tok/s from one minute to the next).

Printed: each round's llama-bench and client rates and their ratio, the medians, the
server's own ``timings`` rate, and the server's resident memory after each phase with its
peak (``VmHWM``: the most it ever held).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from otelbench.bench_runner.client import measure_run  # noqa: E402
from otelbench.bench_runner.llama_server import LlamaServer, default_threads, find_embedded_model, find_llama_bench  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while seven small birds watch from an old fence".split()


def memory_mib(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) of a process, in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def text(n_words: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n_words))


def llama_bench(model: Path, threads: int) -> float:
    """One tg128 of llama-bench, in tok/s."""
    out = subprocess.run([str(find_llama_bench()), "-m", str(model), "-t", str(threads), "-p", "0", "-n", "128",
                          "-r", "1", "-o", "json"], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)[0]["avg_ts"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--server-args", default="", help="more llama-server flags, to try a setting")
    args = parser.parse_args(argv)
    model, threads = find_embedded_model(), args.threads or default_threads()

    memory: list[tuple[str, float, float]] = []
    server = LlamaServer(model, n_threads=threads, extra_args=tuple(args.server_args.split()))
    with server, httpx.Client(timeout=600, trust_env=False) as client:
        memory.append(("started", *memory_mib(server.pid)))
        chat = f"{server.base_url}/chat/completions"
        long = client.post(chat, json={"model": server.model_id, "max_tokens": 16, "messages": [
            {"role": "user", "content": text(5200, 1) + "\nSummarize the text above."}]}).json()
        memory.append((f"long prompt ({long['usage']['prompt_tokens']} tokens)", *memory_mib(server.pid)))

        def logprobs(i: int) -> dict:
            return client.post(chat, json={"model": server.model_id, "max_tokens": 64, "logprobs": True,
                                           "top_logprobs": 20, "messages": [
                {"role": "user", "content": text(1200, i) + f"\nGrade this text from 1 to {i + 2}."}]}).json()

        with ThreadPoolExecutor(4) as pool:
            graded = list(pool.map(logprobs, range(4)))
        assert all(len(g["choices"][0]["logprobs"]["content"]) > 0 for g in graded)
        memory.append(("4 logprobs requests at once", *memory_mib(server.pid)))
        tg, streams = [], []
        for _ in range(args.runs):
            tg.append(llama_bench(model, threads))
            streams.append(measure_run(server.base_url, server.model_id, "Tell me a long story about a lighthouse.",
                                       max_tokens=128, extra_body={"ignore_eos": True}, client=client))
        memory.append((f"{args.runs} streams of 128 tokens", *memory_mib(server.pid)))
    bad = [s.error for s in streams if not s.ok or s.n_out != 128]
    if bad:
        raise SystemExit(f"streams failed: {bad}")
    client_tps = [s.decode_tps for s in streams]
    server_tps = [s.server_decode_tps for s in streams]
    print(f"model {model.name}, {threads} threads")
    for i, (b, c) in enumerate(zip(tg, client_tps), start=1):
        print(f"round {i}: llama-bench tg128 {b:6.1f}, client {c:6.1f} tok/s ({c / b:.1%})")
    print(f"llama-bench tg128        {statistics.median(tg):6.1f} tok/s median")
    print(f"client decode (streams)  {statistics.median(client_tps):6.1f} tok/s median")
    print(f"server timings decode    {statistics.median(server_tps):6.1f} tok/s median")
    print(f"client / llama-bench     {statistics.median(c / b for b, c in zip(tg, client_tps)):6.1%} "
          f"(median of the rounds' ratios)")
    for phase, rss, _ in memory:
        print(f"RSS after {phase:<34} {rss:6.0f} MiB")
    print(f"RSS peak (VmHWM)                             {max(m[2] for m in memory):6.0f} MiB "
          f"({max(m[2] for m in memory) * 2**20 / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
