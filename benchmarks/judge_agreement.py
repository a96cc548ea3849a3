"""How far the judge agrees with people: the labelled calibration set, judged and scored.

    python benchmarks/judge_agreement.py --embedded smollm2|qwen [--prompt judge-run]
    python benchmarks/judge_agreement.py --base-url http://host:8080/v1 --model NAME [--api-key KEY]

Loads tests/data/judge_calibration (85 runs, each labelled good or bad by a person) through
the collector's write path (otelbench.testing.judge_calibration), judges every run with
``processors.judge.judgements`` and prints, for each variant of the score, accuracy at 0.5,
ROC AUC over all runs and over the clear-cut ones (partial answers left out), and the
confusion counts at 0.5. A judge error counts as 0.5 (no opinion) and is counted.

The variants come from one pass — each judgement keeps its parts — so they are compared on
the very same answers:

- ``verdict``: the model's grade alone (by logprobs where the server gives them);
- ``verdict+signals``: capped by the run's own signals (failed, empty, refused);
- ``reference+signals``: the agreement with the judge's own answer where there is one,
  else the grade, capped;
- ``combined``: what the judge stores (processors/judge/judgement.py ``combine``).

``--save FILE`` writes every run's parts as JSON; ``--from FILE`` recomputes the table
from such a file without a model — the agreement and the combined score by today's code,
from the saved answers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.testing import judge_calibration as cal  # noqa: E402
from otelbench.processors.config import DEFAULT_JUDGE_CONCURRENCY, EMBEDDED, EMBEDDED_JUDGE_CONCURRENCY, Judge  # noqa: E402
from otelbench.processors.judge.signals import FAILED_CAP, REFUSAL_CAP, EMPTY_CAP  # noqa: E402

NO_OPINION = 0.5
CHUNK = 10


def _cap(p: dict[str, Any]) -> float | None:
    caps = [c for c, on in ((EMPTY_CAP, p["empty"]), (REFUSAL_CAP, p["refusal"]), (FAILED_CAP, p["failed"])) if on]
    return min(caps) if caps else None


def _capped(score: float | None, p: dict[str, Any]) -> float | None:
    cap = _cap(p)
    return score if score is None or cap is None else min(score, cap)


def _reference(p: dict[str, Any]) -> float | None:
    return _capped(p["agreement"] if p["agreement"] is not None else p["grade"], p)


VARIANTS: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "verdict": lambda p: p["grade"],
    "verdict+signals": lambda p: _capped(p["grade"], p),
    "reference+signals": _reference,
    "combined": lambda p: p["score"],
}


def parts(frame: Any, results: list[Any]) -> list[dict[str, Any]]:
    """Each run's label and judgement parts, as plain JSON values."""
    by_trace = {r["trace_id"]: r for r in frame.iter_rows(named=True)}
    out = []
    for j in results:
        row = by_trace[j.trace_id]
        sig = j.run.signals if j.run is not None else None
        out.append({
            "case": row["case"], "label": row["label"], "category": row["category"], "kind": row["kind"],
            "clear_cut": row["clear_cut"], "score": j.score, "method": j.method, "error": j.error,
            "grade": j.grade.score if j.grade else None,
            "grade_probabilities": j.grade.reading.probabilities if j.grade and j.grade.reading else None,
            "reference": j.reference, "agreement": j.agreement.value if j.agreement else None,
            "agreement_kind": j.agreement.kind if j.agreement else None,
            "failed": bool(sig and sig.failed), "empty": bool(sig and sig.empty),
            "refusal": bool(sig and sig.refusal), "truncated": j.input_truncated,
            "raw_answer": j.raw_answer, "reasoning": j.reasoning,
        })
    return out


def recompare(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved judgements with the agreement and the combined score computed again by today's
    code (processors/judge/reference.py, judgement.py) from the saved answers: a change
    there is measured without asking the model again."""
    from otelbench.processors.judge.budget import DEFAULT_MAX_INPUT_TOKENS
    from otelbench.processors.judge.judgement import agreement_of, combine, run_text

    frame = {r["case"]: r for r in cal.runs().iter_rows(named=True)}
    out = []
    for p in rows:
        run = run_text(frame[p["case"]], DEFAULT_MAX_INPUT_TOKENS)
        agreed = agreement_of(run, p["reference"])
        score = None if p["grade"] is None else combine(p["grade"], agreed, run.signals)
        out.append(p | {"agreement": agreed.value if agreed else None,
                        "agreement_kind": agreed.kind if agreed else None, "score": score})
    return out


def table(rows: list[dict[str, Any]]) -> str:
    """The figures of every variant, as a text table."""
    lines = [f"{'variant':<20} {'n':>3} {'err':>3} {'acc@0.5':>7} {'AUC all':>7} {'AUC clear':>9}   "
             f"confusion (all, ≥0.5 = good)"]
    for name, pick in VARIANTS.items():
        scores = [pick(p) for p in rows]
        errors = sum(s is None for s in scores)
        filled = [NO_OPINION if s is None else float(s) for s in scores]
        labels = [p["label"] for p in rows]
        clear = [i for i, p in enumerate(rows) if p["clear_cut"]]
        auc = cal.roc_auc(filled, labels)
        auc_clear = cal.roc_auc([filled[i] for i in clear], [labels[i] for i in clear])
        c = cal.confusion(filled, labels)
        acc = (c["tp"] + c["tn"]) / max(1, len(rows))
        lines.append(f"{name:<20} {len(rows):>3} {errors:>3} {acc:>7.2f} {_f(auc):>7} {_f(auc_clear):>9}   "
                     f"TP {c['tp']:>2}  FP {c['fp']:>2}  FN {c['fn']:>2}  TN {c['tn']:>2}")
    return "\n".join(lines)


def by_category(rows: list[dict[str, Any]]) -> str:
    """Mean stored score per category (how the judge treats each kind of run)."""
    groups: dict[str, list[float]] = {}
    for p in rows:
        groups.setdefault(p["category"], []).append(NO_OPINION if p["score"] is None else p["score"])
    return "  ".join(f"{k} {sum(v) / len(v):.2f} (n={len(v)})" for k, v in sorted(groups.items()))


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def judge(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]], float]:
    import openai
    import polars as pl

    from otelbench.processors.judge import Counters, check_endpoint, judgements, load_prompt

    frame = cal.runs()
    if args.sample:  # a seeded random subset, for a slow judge: every category keeps its odds
        frame = frame.sample(n=min(args.sample, frame.height), seed=args.seed, shuffle=True)
    if args.limit:
        frame = frame.head(args.limit)
    prompt = load_prompt(args.prompt)

    def run(base_url: str, model: str, api_key: str) -> tuple[list[Any], float]:
        client = openai.OpenAI(base_url=base_url, api_key=api_key)
        check_endpoint(client, model)
        counters = Counters()
        began = time.perf_counter()
        results: list[Any] = []
        for start in range(0, frame.height, CHUNK):  # saved as it goes: a long pass can be looked at
            results += judgements(frame.slice(start, CHUNK), client=client, model=model, prompt=prompt,
                                  concurrency=args.concurrency, counters=counters)
            if args.save:
                partial = frame.filter(pl.col("trace_id").is_in([j.trace_id for j in results]))
                args.save.write_text(json.dumps({"judge": "(partial)", "runs": parts(partial, results)}) + "\n")
        elapsed = time.perf_counter() - began
        print(f"judged {counters.judged}, errors {counters.errors}, requests {counters.requests}, "
              f"methods {counters.by_method}, truncated {counters.truncated} in {elapsed:.0f}s", file=sys.stderr)
        return results, elapsed

    if args.embedded:
        from otelbench.bench_runner.llama_server import LlamaServer

        path = cal.embedded_model_path(args.embedded)
        with LlamaServer(path, n_threads=args.threads) as server:
            results, elapsed = run(server.base_url, server.model_id or str(path), "none")
        label = f"{args.embedded} ({path.name}, embedded llama-server)"
    else:
        results, elapsed = run(args.base_url, args.model, args.api_key or os.environ.get("OPENAI_API_KEY", "none"))
        label = f"{args.model} at {args.base_url}"
    return f"{label}, prompt {prompt.version}", parts(frame, results), elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--embedded", choices=cal.EMBEDDED, help="start the local server with this model")
    source.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    source.add_argument("--from", dest="from_file", type=Path, help="recompute from a --save file")
    parser.add_argument("--model", help="the model name at --base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--prompt", default="judge-run")
    parser.add_argument("--concurrency", type=int, default=None,
                        help=f"requests at once (default: the judge's, {EMBEDDED_JUDGE_CONCURRENCY} embedded, "
                             f"else {DEFAULT_JUDGE_CONCURRENCY})")
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (embedded)")
    parser.add_argument("--limit", type=int, default=0, help="judge only the first N runs")
    parser.add_argument("--sample", type=int, default=0, help="judge a seeded random subset of N runs")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--save", type=Path, help="write every run's judgement parts here (JSON)")
    args = parser.parse_args(argv)
    if args.concurrency is None:  # the judge's own default for this endpoint
        args.concurrency = Judge(endpoint=EMBEDDED if args.embedded else (args.base_url or EMBEDDED)).requests_at_once
    if args.base_url and not args.model:
        parser.error("--base-url needs --model")
    if args.from_file:
        saved = json.loads(args.from_file.read_text())
        title, rows = saved["judge"], recompare(saved["runs"])
    else:
        title, rows, elapsed = judge(args)
        if args.save:
            args.save.write_text(json.dumps({"judge": title, "elapsed_s": elapsed, "runs": rows}, indent=1) + "\n")
    good = sum(p["label"] for p in rows)
    print(f"{title}: {len(rows)} runs ({good} good, {len(rows) - good} bad, "
          f"{sum(p['clear_cut'] for p in rows)} clear-cut)")
    print(table(rows))
    print("mean score by category:", by_category(rows))


if __name__ == "__main__":
    main()
