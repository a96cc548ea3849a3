"""Runs judged per minute against the embedded model, by concurrency and prefix reuse.

    python benchmarks/judge_throughput.py [--embedded smollm2|qwen] [--runs 48] [--threads N]

Judges the first ``--runs`` calibration runs (otelbench.testing.judge_calibration: each
≤ 2,000 characters of task, tools and output) with ``processors.judge.judgements`` and the
default prompt, at concurrency 1, 2 and 4, on the embedded ``llama-server`` as
``otelbench process`` starts it (4 slots sharing one KV cache), in three prefix-reuse settings
(the default judges one at a time: ``processors.config.EMBEDDED_JUDGE_CONCURRENCY``):

- ``none``: a unique nonce opens every request's system message, so no request can reuse
  an earlier one's evaluated prompt (and ``cache_prompt: false`` is sent);
- ``default``: the requests as the judge sends them, on the server as ``LlamaServer`` starts
  it: each slot keeps its last prompt's state and the server gives a request the slot whose
  prompt shares the most with it, so the judge's two kinds of request (its own answer, the
  grade) each tend to find a slot holding their own fixed part; idle slots' states move to
  a 32 MiB RAM cache (``--cache-ram``) when a request needs their cells;
- ``ram0``: as ``default`` without the RAM cache.

Prints runs per minute for each (a run is a judgement: the requests it takes), and the prompt
tokens the server evaluated per run (from its ``/metrics``: what prefix reuse saved). Before
each measurement, two runs per request in flight are judged at that concurrency, so model
loading and the slots' first prompts are not counted.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.testing import judge_calibration as cal  # noqa: E402

CONCURRENCY = (1, 2, 4)
MAX_RUN_CHARS = 2000


class _Completions:
    def __init__(self, inner: Any, reuse: bool) -> None:
        self.inner, self.reuse = inner, reuse

    def create(self, **body: Any) -> Any:
        body["extra_body"] = {"cache_prompt": self.reuse}
        if not self.reuse:
            messages = [dict(m) for m in body["messages"]]
            messages[0]["content"] = f"[{uuid.uuid4().hex}]\n{messages[0]['content']}"
            body["messages"] = messages
        return self.inner.create(**body)


class PrefixClient:
    """An OpenAI client whose chat requests do or do not allow prefix reuse (see the module doc)."""

    def __init__(self, client: Any, reuse: bool) -> None:
        self.client, self.reuse = client, reuse
        self.models = client.models
        self.chat = type("Chat", (), {})()
        self.chat.completions = _Completions(client.chat.completions, reuse)
        self.base_url = client.base_url

    def with_options(self, **options: Any) -> PrefixClient:
        return PrefixClient(self.client.with_options(**options), self.reuse)


def prompt_tokens(root_url: str) -> float:
    """The server's running count of prompt tokens it evaluated (``llamacpp:prompt_tokens_total``)."""
    import httpx

    for line in httpx.get(f"{root_url}/metrics", timeout=10).text.splitlines():
        if line.startswith("llamacpp:prompt_tokens_total "):
            return float(line.split()[1])
    raise RuntimeError("the server's /metrics has no llamacpp:prompt_tokens_total")


def measure(base_url: str, model: str, frame: Any, prompt: Any, *, reuse: bool, concurrency: int) -> float:
    """Runs judged per minute."""
    import openai

    from otelbench.processors.judge import judgements

    client = PrefixClient(openai.OpenAI(base_url=base_url, api_key="none"), reuse)
    began = time.perf_counter()
    results = judgements(frame, client=client, model=model, prompt=prompt, concurrency=concurrency)
    elapsed = time.perf_counter() - began
    errors = sum(j.error is not None for j in results)
    if errors:
        print(f"  ({errors} judge errors)", file=sys.stderr)
    return 60 * len(results) / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--embedded", choices=cal.EMBEDDED, default="smollm2")
    parser.add_argument("--runs", type=int, default=48)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--prompt", default="judge-run")
    parser.add_argument("--settings", default="none,default,ram0")
    args = parser.parse_args(argv)

    import polars as pl

    from otelbench.bench_runner.llama_server import LlamaServer
    from otelbench.processors.judge import load_prompt
    from otelbench.processors.judge.runs import message_text

    frame = cal.runs()
    size = [len(message_text(i) or "") + len(message_text(o) or "") + len(t or "")
            for i, o, t in zip(frame["input"], frame["output"], frame["tool_summary"])]
    frame = frame.filter(pl.Series(size) <= MAX_RUN_CHARS).head(args.runs)
    prompt = load_prompt(args.prompt)
    path = cal.embedded_model_path(args.embedded)
    settings = args.settings.split(",")
    warm_up = cal.runs().tail(2 * max(CONCURRENCY))  # runs outside the measured ones
    table: dict[tuple[str, int], tuple[float, float]] = {}
    for setting in settings:
        ram = {"ram0": {"cache_ram_mib": 0}}.get(setting, {})
        with LlamaServer(path, n_threads=args.threads, **ram) as server:
            model, reuse = server.model_id or str(path), setting != "none"
            for concurrency in CONCURRENCY:
                measure(server.base_url, model, warm_up.head(2 * concurrency), prompt, reuse=reuse,
                        concurrency=concurrency)
                before = prompt_tokens(server.root_url)
                rate = measure(server.base_url, model, frame, prompt, reuse=reuse, concurrency=concurrency)
                table[setting, concurrency] = rate, (prompt_tokens(server.root_url) - before) / frame.height
                print(f"{setting:>5} concurrency {concurrency}: {rate:.1f} runs/min, "
                      f"{table[setting, concurrency][1]:.0f} prompt tokens evaluated a run", file=sys.stderr)
    print(f"{args.embedded} ({path.name}), {frame.height} runs of ≤ {MAX_RUN_CHARS} characters, "
          f"prompt {prompt.version}, threads {args.threads or 'default'}")
    print(f"{'prefix reuse':<14}" + "".join(f"{f'concurrency {c}':>22}" for c in CONCURRENCY)
          + "   (runs/min, prompt tokens evaluated a run)")
    for setting in settings:
        print(f"{setting:<14}" + "".join(f"{f'{table[setting, c][0]:.1f}, {table[setting, c][1]:.0f}':>22}"
                                         for c in CONCURRENCY))


if __name__ == "__main__":
    main()
