"""Is a benchmark result physically possible, and how far can it be trusted?

Pure functions: no I/O, no clock. Input shapes:

- ``CaseSummary``: one case's medians over its timed runs — ``decode_tps``,
  ``prefill_tps`` (client-side), ``server_decode_tps`` / ``server_prefill_tps`` (the
  server's own timings), ``decode_cv`` (sd / mean of decode tok/s), ``n_out`` (median
  output tokens), ``token_source`` (``bench_runner.client.TokenSource`` value: "usage",
  "server-timings", "tokenizer", "estimate-chars/4", "none"), ``n_runs``, and
  ``context_tokens`` (mean tokens in context while decoding, for the KV cache). Every
  field may be None; ``CaseSummary.from_mapping`` takes a plain dict of the same keys.
- ``ModelFacts``: bytes a decode step reads and FLOPs a prompt token costs, built from
  a ``gguf.GgufInfo`` (``ModelFacts.from_gguf``) or from a file size alone.
- ``Limits``: memory bandwidth and peak compute, and whether each is a datasheet peak
  (a hard physical limit) or a measurement / estimate (a guide); ``limits_from_hardware``
  builds it from ``hardware.Hardware``.

The roofline (docs/bench.md, "Physical limits"): decode is memory-bound, so decode tok/s
≤ bandwidth / bytes read per token; prefill is compute-bound, so prefill tok/s ≤ peak
FLOP/s / FLOPs per token. ``assess`` turns the checks into HIGH / MEDIUM / LOW with every
reason spelled out in numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from otelbench.bench_runner.gguf import GgufInfo
from otelbench.bench_runner.hardware import Hardware
from otelbench.bench_runner.stats import summarize

TYPICAL_EFFICIENCY = (0.6, 0.85)  # share of peak bandwidth real decode kernels reach
GUIDE_SLACK = 2.0  # a measured or estimated limit may be this far too low before we call it impossible
CLIENT_SERVER_MEDIUM, CLIENT_SERVER_LOW = 0.15, 0.5  # relative disagreement
CV_MEDIUM, CV_LOW = 0.15, 0.3
MIN_OUTPUT_TOKENS = 16  # below this, TTFT jitter dominates decode_ms / (n_out - 1)
MIN_RUNS = 5  # docs/bench.md: warm-up, then at least 5 timed runs


class Confidence(StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"

    @property
    def rank(self) -> int:
        return {"HIGH": 0, "MEDIUM": 1, "LOW": 2}[self.value]


class LimitKind(StrEnum):
    PEAK = "peak"  # a datasheet figure: exceeding it is impossible
    GUIDE = "guide"  # a quick measurement or a flags-based estimate: may itself be low


@dataclass(frozen=True)
class CaseSummary:
    decode_tps: float | None = None
    prefill_tps: float | None = None
    server_decode_tps: float | None = None
    server_prefill_tps: float | None = None
    decode_cv: float | None = None
    n_out: float | None = None
    token_source: str | None = None
    n_runs: int | None = None
    context_tokens: float | None = None
    name: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> CaseSummary:
        """From a plain dict; unknown keys are ignored so a whole summary row can be passed.

        ``n_out_source`` (``client.RunResult``'s name) is read as ``token_source``.
        """
        known = {f.name for f in fields(cls)}
        renamed = {_ALIASES.get(k, k): v for k, v in data.items() if k not in _ALIASES or _ALIASES[k] not in data}
        return cls(**{k: v for k, v in renamed.items() if k in known})

    @classmethod
    def from_runs(cls, runs: Sequence[Any], name: str = "") -> CaseSummary:
        """Medians over successful ``client.RunResult``-like runs (attributes read by name)."""
        ok = [r for r in runs if getattr(r, "ok", True)]

        def values(attr: str) -> list[float]:
            return [float(v) for v in (getattr(r, attr, None) for r in ok) if v is not None]

        decode = summarize(values("decode_tps"))
        sources = [str(getattr(r, "n_out_source", "") or "none") for r in ok]
        # The least trustworthy source among the runs speaks for the case.
        source = max(sources, key=lambda s: _SOURCE_RANK.get(s.split("-")[0], 0), default=None)
        contexts = [
            float((getattr(r, "n_prompt", 0) or 0) + (getattr(r, "n_prompt_cached", 0) or 0) + (r.n_out or 0) / 2)
            for r in ok
            if getattr(r, "n_out", None) is not None
        ]
        return cls(
            decode_tps=decode.median,
            prefill_tps=summarize(values("prefill_tps")).median,
            server_decode_tps=summarize(values("server_decode_tps")).median,
            server_prefill_tps=summarize(values("server_prefill_tps")).median,
            decode_cv=decode.cv,
            n_out=summarize(values("n_out")).median,
            token_source=source,
            n_runs=len(ok),
            context_tokens=summarize(contexts).median,
            name=name,
        )


_ALIASES = {"n_out_source": "token_source"}
_SOURCE_RANK = {"usage": 0, "server": 1, "tokenizer": 2, "estimate": 3, "none": 4}


@dataclass(frozen=True)
class ModelFacts:
    decode_bytes_per_token: float | None  # weights one decode step streams from memory
    prefill_flops_per_token: float | None
    kv_bytes_per_context_token: float | None = None
    description: str = ""

    @classmethod
    def from_gguf(cls, info: GgufInfo) -> ModelFacts:
        weights: float | None
        if info.active_weight_bytes is None:  # a tensor type the gguf package does not know: use the file
            fallback = cls.from_size(info.size_bytes, None, info.expert_count, info.expert_used_count)
            weights = fallback.decode_bytes_per_token
        elif info.output_bytes:
            # With a separate output head, token_embd is a lookup of one row per token;
            # tied embeddings are read whole, as the output head.
            weights = float(info.active_weight_bytes - info.embedding_bytes)
        else:
            weights = float(info.active_weight_bytes)
        flops = None
        if info.active_parameter_count:
            # Prompt tokens skip the embedding lookup's "matmul" and the output head:
            # servers compute logits for the last prompt token only. Fewer FLOPs per
            # token makes a looser bound, which is what an impossibility check needs.
            matmul = info.active_parameter_count - info.embedding_parameter_count - info.output_parameter_count
            flops = 2.0 * (matmul if matmul > 0 else info.active_parameter_count)
        what = f"{info.quantization or '?'} {info.architecture or '?'}"
        if info.is_moe:
            what += f", {info.expert_used_count} of {info.expert_count} experts active"
        return cls(weights, flops, info.kv_bytes_per_token, what)

    @classmethod
    def from_size(
        cls, size_bytes: float, parameter_count: float | None = None,
        expert_count: int | None = None, expert_used_count: int | None = None,
    ) -> ModelFacts:  # fmt: skip
        """Facts from a file size alone (no header): all of it read per token, MoE scaled."""
        share = expert_used_count / expert_count if expert_count and expert_used_count and expert_count > 1 else 1.0
        flops = 2.0 * parameter_count * share if parameter_count else None
        moe = f", {expert_used_count} of {expert_count} experts" if share < 1 else ""
        return cls(size_bytes * share, flops, None, f"{size_bytes / 1e6:.0f} MB file{moe}")


@dataclass(frozen=True)
class Limits:
    bandwidth_gbs: float | None
    bandwidth_kind: LimitKind
    bandwidth_source: str
    peak_ops: float | None  # FLOP/s or int8 op/s, whichever is higher: kernels use either
    peak_kind: LimitKind
    peak_source: str
    where: str = ""


def limits_from_hardware(hw: Hardware, model_bytes: float | None = None) -> Limits:
    """Bandwidth and compute of where the model most likely runs: the GPUs if any, else the CPU."""
    if not hw.gpus:
        cpu = hw.cpu
        peak = max(cpu.peak_fp32_flops or 0, cpu.peak_int8_ops or 0) or None
        return Limits(
            hw.cpu_bandwidth_gbs, LimitKind.GUIDE, hw.cpu_bandwidth_source,
            peak, LimitKind.GUIDE, cpu.peak_source, f"CPU: {cpu.model}",
        )  # fmt: skip
    names = ", ".join(g.name for g in hw.gpus)
    known = [(g, g.spec) for g in hw.gpus if g.spec is not None]
    if not known:
        why = f"no datasheet figures for {names}"
        return Limits(None, LimitKind.PEAK, why, None, LimitKind.PEAK, why, f"GPU: {names}")
    # Summed over GPUs: tensor parallelism uses them all at once; a layer split does
    # not, but an upper bound must allow the faster case.
    bandwidth = sum(spec.bandwidth_gbs for _, spec in known)
    peak = sum(max(spec.fp16_tflops or 0, spec.int8_tops or 0) * 1e12 for _, spec in known)
    source = "datasheet: " + "; ".join(f"{g.name}: {spec.source}" for g, spec in known)
    memory = sum(g.memory_bytes or 0 for g, _ in known)
    if model_bytes and memory and model_bytes > memory:
        source += (
            f" (model {model_bytes / 1e9:.1f} GB > {memory / 1e9:.1f} GB of GPU memory: "
            "partly on the CPU, so this bound is generous)"
        )
    return Limits(bandwidth, LimitKind.PEAK, source, peak or None, LimitKind.PEAK, source, f"GPU: {names}")

@dataclass(frozen=True)
class Bounds:
    bytes_per_token: float | None
    decode_tps: float | None  # upper bound
    prefill_tps: float | None  # upper bound
    detail: str


def roofline(model: ModelFacts, limits: Limits, context_tokens: float | None = None) -> Bounds:
    """Upper bounds on decode and prefill tok/s for this model on these limits."""
    bytes_per_token = model.decode_bytes_per_token
    detail = f"{bytes_per_token / 1e6:.1f} MB of weights" if bytes_per_token else "unknown bytes"
    if bytes_per_token and model.kv_bytes_per_context_token and context_tokens:
        kv = model.kv_bytes_per_context_token * context_tokens
        bytes_per_token += kv
        detail += f" + {kv / 1e6:.1f} MB of KV cache ({context_tokens:.0f} tokens)"
    detail += " read per token"
    decode = limits.bandwidth_gbs * 1e9 / bytes_per_token if limits.bandwidth_gbs and bytes_per_token else None
    if limits.bandwidth_gbs:
        detail += f" at {limits.bandwidth_gbs:.1f} GB/s {_origin(limits.bandwidth_source, limits.bandwidth_kind)}"
    prefill = limits.peak_ops / model.prefill_flops_per_token if limits.peak_ops and model.prefill_flops_per_token else None
    return Bounds(bytes_per_token, decode, prefill, detail)


def _origin(source: str, kind: LimitKind) -> str:
    """"measured" / "datasheet" / "estimate": the word before the colon of a hardware source."""
    word = source.split(":", 1)[0].strip() if ":" in source else ""
    return word or ("datasheet" if kind is LimitKind.PEAK else "measured")


@dataclass(frozen=True)
class Finding:
    severity: Confidence  # MEDIUM or LOW: what this finding lowers confidence to
    code: str
    message: str


@dataclass(frozen=True)
class Assessment:
    confidence: Confidence
    reasons: tuple[Finding, ...]
    bounds: Bounds | None
    notes: tuple[str, ...] = field(default_factory=tuple)  # context that lowers nothing

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence.value,
            "reasons": [{"severity": r.severity.value, "code": r.code, "message": r.message} for r in self.reasons],
            "decode_bound_tps": self.bounds.decode_tps if self.bounds else None,
            "prefill_bound_tps": self.bounds.prefill_tps if self.bounds else None,
            "notes": list(self.notes),
        }


def _above_bound(
    what: str, value: float | None, bound: float | None, kind: LimitKind, bound_name: str, detail: str, why: str
) -> Finding | None:
    """LOW beyond a datasheet peak (or GUIDE_SLACK × a measured guide); MEDIUM when close."""
    if value is None or not bound:
        return None
    ratio = value / bound
    code = what.replace(" ", "_")
    numbers = f"{value:.0f} tok/s is {ratio:.1f}× the {bound_name} bound of {bound:.0f} tok/s ({detail})"
    if ratio > (1.0 if kind is LimitKind.PEAK else GUIDE_SLACK):
        message = f"{what} {ratio:.1f}× above the {bound_name} bound ({value:.0f} vs ≤ {bound:.0f} tok/s; {detail}): {why}"
        return Finding(Confidence.LOW, f"{code}_above_bound", message)
    if ratio > 1.0:  # above a measured or estimated limit, but within that figure's own error
        return Finding(Confidence.MEDIUM, f"{code}_above_guide",
                       f"{what} {numbers}: above a measured or estimated limit that may itself read low; check it")  # fmt: skip
    low, high = TYPICAL_EFFICIENCY
    if kind is LimitKind.PEAK and bound_name == "memory-bandwidth" and ratio > high:
        return Finding(Confidence.MEDIUM, f"{code}_near_peak",
                       f"{what} {numbers}: above the {low:.0%}–{high:.0%} of peak bandwidth real kernels reach")  # fmt: skip
    return None


def check_bounds(case: CaseSummary, bounds: Bounds, limits: Limits) -> list[Finding]:
    """Client and server figures against the roofline."""
    bandwidth = (bounds.decode_tps, limits.bandwidth_kind, "memory-bandwidth", bounds.detail)
    compute = (bounds.prefill_tps, limits.peak_kind, "compute", limits.peak_source)
    found = [
        _above_bound("decode", case.decode_tps, *bandwidth, "speculative decoding or a counting error?"),
        _above_bound("server decode", case.server_decode_tps, *bandwidth, "the server's own timings are wrong?"),
        _above_bound("prefill", case.prefill_tps, *compute, "a prompt-cache hit or a counting error?"),
        _above_bound("server prefill", case.server_prefill_tps, *compute, "a prompt-cache hit the server did not subtract?"),
    ]
    return [f for f in found if f is not None]


def check_measurement(case: CaseSummary) -> list[Finding]:
    """Checks that need no model or hardware: agreement, spread, sample sizes, token counts."""
    found: list[Finding] = []
    client, server = case.decode_tps, case.server_decode_tps
    if client and server and abs(client - server) / server > CLIENT_SERVER_MEDIUM:
        gap = abs(client - server) / server
        message = (
            f"client decode {client:.1f} tok/s and server {server:.1f} tok/s differ by {gap:.0%} "
            f"(> {CLIENT_SERVER_MEDIUM:.0%}): a buffering proxy, batched chunks or a token-count mismatch?"
        )
        found.append(Finding(Confidence.LOW if gap > CLIENT_SERVER_LOW else Confidence.MEDIUM, "client_server_disagree", message))
    cv = case.decode_cv
    if cv is not None and cv > CV_MEDIUM:
        severity, limit = (Confidence.LOW, CV_LOW) if cv > CV_LOW else (Confidence.MEDIUM, CV_MEDIUM)
        message = f"decode tok/s varies across runs: CV {cv:.2f} (> {limit:.2f}); other load, throttling or model swapping?"
        found.append(Finding(severity, "high_cv", message))
    n_out = case.n_out
    if n_out is not None and n_out < 2:
        found.append(Finding(Confidence.LOW, "no_decode", f"median output of {n_out:.0f} token(s): decode speed is undefined"))
    elif n_out is not None and n_out < MIN_OUTPUT_TOKENS:
        message = f"median output of {n_out:.0f} tokens (< {MIN_OUTPUT_TOKENS}): decode tok/s rests on a few gaps"
        found.append(Finding(Confidence.MEDIUM, "short_output", message))
    source = (case.token_source or "").lower()
    if source.startswith("estimate"):
        message = f"token counts are an estimate ({case.token_source}), not the server's: tok/s may be off by tens of percent"
        found.append(Finding(Confidence.MEDIUM, "estimated_tokens", message))
    elif source == "none":
        message = "no token count from server or tokenizer: tok/s is not a measurement"
        found.append(Finding(Confidence.LOW, "no_token_count", message))
    if case.n_runs is not None and case.n_runs < MIN_RUNS:
        message = f"{case.n_runs} timed run(s) (< {MIN_RUNS}): medians and CV are rough"
        found.append(Finding(Confidence.MEDIUM, "few_runs", message))
    return found


def assess(
    case: CaseSummary | Mapping[str, Any], model: ModelFacts | GgufInfo | None, limits: Limits | None
) -> Assessment:
    """All checks for one case, combined: the worst finding sets the confidence."""
    if not isinstance(case, CaseSummary):
        case = CaseSummary.from_mapping(case)
    if isinstance(model, GgufInfo):
        model = ModelFacts.from_gguf(model)
    reasons = check_measurement(case)
    if model is None:
        reasons.append(Finding(Confidence.MEDIUM, "bounds_unchecked", "no model file metadata: physical bounds not checked"))
    elif limits is None or not limits.bandwidth_gbs:
        why = limits.bandwidth_source if limits else "no hardware figures"
        reasons.append(Finding(Confidence.MEDIUM, "bounds_unchecked", f"decode bound not checked: {why}"))
    notes: list[str] = []
    bounds = None
    if model is not None and limits is not None:
        bounds = roofline(model, limits, case.context_tokens)
        reasons += check_bounds(case, bounds, limits)
        if bounds.decode_tps and case.decode_tps:
            share = case.decode_tps / bounds.decode_tps
            bound = f"≤ {bounds.decode_tps:.0f} tok/s: {bounds.detail}"
            notes.append(f"decode at {share:.0%} of the memory-bandwidth bound ({bound})")
        if bounds.prefill_tps and case.prefill_tps:
            share = case.prefill_tps / bounds.prefill_tps
            notes.append(f"prefill at {share:.0%} of the compute bound (≤ {bounds.prefill_tps:.0f} tok/s)")
    confidence = max((r.severity for r in reasons), key=lambda c: c.rank, default=Confidence.HIGH)
    return Assessment(confidence, tuple(reasons), bounds, tuple(notes))
