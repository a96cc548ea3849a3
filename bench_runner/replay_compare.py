"""A replayed run beside its recording, and an agent's runs summed up (``otelbench replay``).

Pure functions over what each side of each llm call did (``Outcome``):

- **tool calls**: the same calls when the two sides ask for the same multiset of (tool
  name, arguments), the arguments compared as parsed JSON (``{"city":"Paris"}`` equals
  ``{ "city": "Paris" }``; text that is not JSON is compared as text);
- **final answer**: the text of the run's last call, the candidate's checked against the
  recorded one with the judge's deterministic answer checks (processors/judge/reference.py:
  the number, the JSON values or the answer words it holds) and its signals (an empty
  answer, a refusal);
- a run's **behaviour matches** when every call asks for the same tools and the final
  answer agrees; it is **at least as good** when the candidate did not fail and its
  answer agrees, or the recording's answer was empty or a refusal and the candidate's is not;
  when a judge model compared the two answers (bench_runner/replay_judge.py), its grade
  decides instead: at least as good at a score of 0.5 ("as good") or more;
- its **divergence**: the share of calls whose tool calls differ, plus what the answer
  misses (1 − agreement; 1 when the candidate failed), so 0 to 2, largest first.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from otelbench.processors.judge.reference import Agreement, agreement
from otelbench.processors.judge.signals import is_refusal

AS_GOOD_SCORE = 0.5  # a judge's grade 3 of 1–5: as good as the recorded answer
ANSWER_AGREES = 0.8  # the share of the recorded answer's numbers / values / words the candidate's must hold
MOST_DIVERGENT = 5


@dataclass(frozen=True)
class Outcome:
    """One side of one llm call."""

    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, arguments as canonical JSON text)
    text: str = ""
    ttft_ms: float | None = None
    e2e_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    cost_usd: float | None = None  # recorded: the call's (llm_calls.cost_usd); candidate: priced by its model


def canonical_arguments(arguments: Any) -> str:
    """Arguments as canonical JSON text (keys sorted), so equal values compare equal."""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return arguments.strip()
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_call(name: Any, arguments: Any) -> tuple[str, str]:
    return str(name or ""), canonical_arguments(arguments if arguments is not None else {})


def recorded_outcome(output_messages: str | None, *, ttft_ms: float | None, e2e_ms: float | None,
                     input_tokens: int | None, output_tokens: int | None, cost_usd: float | None = None) -> Outcome:
    """What a recorded call answered, from its output messages (GenAI shape, JSON text)."""
    calls, texts = [], []
    for m in json.loads(output_messages) if output_messages else []:
        for p in m.get("parts") or []:
            if p.get("type") == "tool_call":
                calls.append(tool_call(p.get("name"), p.get("arguments")))
            elif p.get("type") == "text":
                texts.append(str(p.get("content") or ""))
    return Outcome(tuple(calls), "".join(texts), ttft_ms, e2e_ms, input_tokens, output_tokens, cost_usd=cost_usd)


def same_tool_calls(a: Outcome, b: Outcome) -> bool:
    return sorted(a.tool_calls) == sorted(b.tool_calls)


@dataclass
class RunComparison:
    trace_id: str
    agent: str
    candidate: str
    calls: int
    calls_matching: int  # calls whose tool calls are the same
    recorded_answer: str
    candidate_answer: str
    answer: Agreement | None  # None: nothing to compare (no answer words beyond the task)
    answer_agrees: bool
    behaviour_matches: bool
    at_least_as_good: bool
    divergence: float
    recorded_ttft_ms: float | None
    candidate_ttft_ms: float | None
    recorded_model_ms: float | None  # the run's llm calls, end to end, summed (its tools are not rerun)
    candidate_model_ms: float | None
    recorded_output_tokens: int | None
    candidate_output_tokens: int | None
    recorded_cost_usd: float | None  # the run's llm calls, summed; None when a call has none
    candidate_cost_usd: float | None  # None: the candidate's model has no price (a local model)
    errors: list[str] = field(default_factory=list)  # the candidate's failed calls
    judge_score: float | None = None  # the judge model's grade of the candidate against the recording, 0–1
    judge_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["link"] = f"/runs/{self.trace_id}"
        return d


def _sum(values: Iterable[float | int | None]) -> Any:
    got = list(values)
    return None if not got or any(v is None for v in got) else sum(got)  # type: ignore[misc]


def _bad(text: str) -> bool:
    return not text.strip() or is_refusal(text)


def final_answers(recorded: Sequence[Outcome], replayed: Sequence[Outcome]) -> tuple[str, str]:
    """The run's final answer on each side: its last call's text."""
    return recorded[-1].text, replayed[-1].text


def compare_run(trace_id: str, agent: str, candidate: str, task: str, recorded: Sequence[Outcome],
                replayed: Sequence[Outcome], *, judge_score: float | None = None,
                judge_reason: str | None = None) -> RunComparison:
    """One run: ``recorded[i]`` and ``replayed[i]`` are the two sides of its i-th call;
    ``judge_score``: a judge model's grade of the final answers, when one was asked."""
    matching = sum(same_tool_calls(r, c) and c.error is None for r, c in zip(recorded, replayed))
    errors = [c.error for c in replayed if c.error]
    rec_answer, cand_answer = final_answers(recorded, replayed)
    check = agreement(cand_answer, rec_answer, task)
    if check is None:
        agrees = " ".join(rec_answer.split()).lower() == " ".join(cand_answer.split()).lower()
    else:
        agrees = check.value >= ANSWER_AGREES
    agrees = agrees and not errors
    missed = 1.0 if errors else (1.0 - check.value if check is not None else float(not agrees))
    better_than_nothing = _bad(rec_answer) and not _bad(cand_answer)
    return RunComparison(
        trace_id=trace_id, agent=agent, candidate=candidate, calls=len(recorded), calls_matching=matching,
        recorded_answer=rec_answer, candidate_answer=cand_answer, answer=check, answer_agrees=agrees,
        behaviour_matches=matching == len(recorded) and agrees,
        at_least_as_good=not errors and (judge_score >= AS_GOOD_SCORE if judge_score is not None
                                         else agrees or better_than_nothing),
        divergence=round((len(recorded) - matching) / len(recorded) + missed, 4),
        recorded_ttft_ms=recorded[0].ttft_ms, candidate_ttft_ms=replayed[0].ttft_ms,
        recorded_model_ms=_sum(o.e2e_ms for o in recorded), candidate_model_ms=_sum(o.e2e_ms for o in replayed),
        recorded_output_tokens=_sum(o.output_tokens for o in recorded),
        candidate_output_tokens=_sum(o.output_tokens for o in replayed),
        recorded_cost_usd=_sum(o.cost_usd for o in recorded), candidate_cost_usd=_sum(o.cost_usd for o in replayed),
        errors=errors,
        judge_score=judge_score, judge_reason=judge_reason)


# -- per agent and candidate --------------------------------------------------------------


@dataclass
class Change:
    """A metric's typical value on each side, over the runs that have it on both."""

    recorded: float | None
    candidate: float | None
    runs: int

    @property
    def ratio(self) -> float | None:
        return None if not self.recorded or self.candidate is None else self.candidate / self.recorded

    def to_dict(self) -> dict[str, Any]:
        return {"recorded": self.recorded, "candidate": self.candidate, "runs": self.runs, "ratio": self.ratio}


def _change(pairs: Iterable[tuple[float | None, float | None]], stat: Any = statistics.median) -> Change:
    both = [(float(a), float(b)) for a, b in pairs if a is not None and b is not None]
    if not both:
        return Change(None, None, 0)
    return Change(stat([a for a, _ in both]), stat([b for _, b in both]), len(both))


def _sides(recorded: Sequence[float | None], candidate: Sequence[float | None]) -> Change:
    """Each side's mean over the runs that have it (``runs``: the recorded side's count):
    a cost the candidate has none of (a local model) still shows what the recording cost."""
    rec = [v for v in recorded if v is not None]
    cand = [v for v in candidate if v is not None]
    return Change(statistics.fmean(rec) if rec else None, statistics.fmean(cand) if cand else None, len(rec))


@dataclass
class Summary:
    agent: str
    candidate: str
    runs: int
    behaviour_matches: int
    at_least_as_good: int
    calls: int
    calls_matching: int
    judged: int  # runs a judge model graded
    ttft_ms: Change  # median of the first call's
    model_ms: Change  # median of each run's llm time
    output_tokens: Change  # mean per run
    cost_usd: Change  # mean per run, each side over the runs that have it: a local candidate has none
    most_divergent: list[RunComparison]

    @property
    def match_share(self) -> float:
        return self.behaviour_matches / self.runs

    @property
    def as_good_share(self) -> float:
        return self.at_least_as_good / self.runs

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "candidate": self.candidate, "runs": self.runs,
                "behaviour_matches": self.behaviour_matches, "match_share": self.match_share,
                "at_least_as_good": self.at_least_as_good, "as_good_share": self.as_good_share,
                "calls": self.calls, "calls_matching": self.calls_matching, "judged": self.judged,
                "ttft_ms": self.ttft_ms.to_dict(), "model_ms": self.model_ms.to_dict(),
                "output_tokens": self.output_tokens.to_dict(), "cost_usd": self.cost_usd.to_dict(),
                "most_divergent": [{"trace_id": r.trace_id, "link": f"/runs/{r.trace_id}", "divergence": r.divergence}
                                   for r in self.most_divergent]}


def summarize(runs: Sequence[RunComparison], most: int = MOST_DIVERGENT) -> list[Summary]:
    """One summary per (agent, candidate), in that order."""
    groups: dict[tuple[str, str], list[RunComparison]] = {}
    for r in runs:
        groups.setdefault((r.agent, r.candidate), []).append(r)
    out = []
    for (agent, candidate), rs in sorted(groups.items()):
        diverging = sorted((r for r in rs if r.divergence > 0), key=lambda r: (-r.divergence, r.trace_id))
        out.append(Summary(
            agent, candidate, len(rs), sum(r.behaviour_matches for r in rs), sum(r.at_least_as_good for r in rs),
            sum(r.calls for r in rs), sum(r.calls_matching for r in rs), sum(r.judge_score is not None for r in rs),
            _change((r.recorded_ttft_ms, r.candidate_ttft_ms) for r in rs),
            _change((r.recorded_model_ms, r.candidate_model_ms) for r in rs),
            _change(((r.recorded_output_tokens, r.candidate_output_tokens) for r in rs), statistics.fmean),
            _sides([r.recorded_cost_usd for r in rs], [r.candidate_cost_usd for r in rs]),
            diverging[:most]))
    return out
