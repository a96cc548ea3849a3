"""A small grounded research agent, the demo agent of the ``grounded-research`` suite.

    python -m otelbench.demo.research_agent [--docs DIR] [--base-url URL] [--model NAME] [--top K]

It reads a question on stdin (else ``OTELBENCH_CASE_INPUT``), searches the Markdown
documents of ``--docs`` (else ``$OTELBENCH_SUITE_DIR/docs``) with its one tool,
``search_docs`` (BM25 over paragraphs, below), and asks a model behind an OpenAI-compatible
endpoint (``--base-url``, else ``OPENAI_BASE_URL``) to answer from the sentences of those
passages closest to the question. The answer alone goes to stdout, diagnostics to stderr;
a model that cannot be reached or fails exits 2 with one line on stderr. With the embedded
SmolLM2-135M it gets 8 of the suite's 17 answer-checked questions right (measured through
``otelbench suite run``, 2-6 s a case on 2 shared cores).

Telemetry, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set: an ``invoke_agent research-agent``
span holding an ``execute_tool search_docs`` span and the chat call (recorded by the
official ``opentelemetry-instrumentation-openai-v2``), its parent the ``TRACEPARENT`` of the
environment when there is one (``otelbench suite run`` sets it: the run joins the case's
trace). docs/suites.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otelbench.demo.agents import genai_messages, providers

AGENT = "research-agent"
TOP_K = 3  # passages search_docs returns
MAX_TOKENS = 64  # a short answer; a JSON object of two keys fits
ATTRIBUTE_CHARS = 4000  # of a tool call's arguments or result on its span
EXPORT_TIMEOUT_S = 5  # a collector that is down costs a run at most this much at exit
BM25_K1, BM25_B = 1.2, 0.75  # the usual constants (Robertson & Zaragoza, 2009)
EVIDENCE = 3  # sentences of those passages in the prompt
STOP = ["\n\n", "Question:"]  # a small model goes on with a question of its own
# Tried on the grounded-research suite's 17 answer-checked questions: longer instructions
# or a worked example scored the same or worse with SmolLM2-135M (4-7 of 17, against 7-9)
# and made its answers longer.
SYSTEM = "Answer from the facts. Be brief."
_WORD = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*")
_STOPWORDS = frozenset("a an and are as at be by did do does for from has have how i in is it its of on or "
                        "that the their there this to was were what when which who why will with".split())


@dataclass(frozen=True)
class Passage:
    doc: str  # the file's name, e.g. pricing.md
    title: str  # the document's first heading
    section: str  # the heading above the paragraph ("" before the first one)
    text: str


def read_passages(folder: Path) -> list[Passage]:
    """The paragraphs (a list counts as one) of every Markdown file of ``folder``, each with
    its document title and section heading: a heading often holds the fact ("3.3.0,
    codename Juniper") that the paragraph under it does not repeat."""
    found: list[Passage] = []
    for path in sorted(folder.glob("*.md")):
        title = section = ""
        for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            lines = [line for line in block.strip().splitlines() if line.strip()]
            while lines and lines[0].startswith("#"):
                heading = lines.pop(0).lstrip("#").strip()
                title, section = (heading, "") if not title else (title, heading)
            if lines:
                found.append(Passage(path.name, title, section, "\n".join(lines)))
    return found


def words(text: str) -> list[str]:
    """Lower-case terms without stop words; a plural's -s dropped so "runs" finds "run"."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w not in _STOPWORDS:
            out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


class SearchIndex:
    """BM25 over passages (their heading counts as part of their text)."""

    def __init__(self, passages: list[Passage]) -> None:
        self.passages = passages
        self._terms = [Counter(words(f"{p.title}\n{p.section}\n{p.text}")) for p in passages]
        self._lengths = [sum(t.values()) for t in self._terms]
        self._avg = sum(self._lengths) / max(len(passages), 1)
        df = Counter(term for terms in self._terms for term in terms)
        n = len(passages)
        self.idf = {term: math.log(1 + (n - k + 0.5) / (k + 0.5)) for term, k in df.items()}

    def search(self, query: str, k: int = TOP_K) -> list[tuple[float, Passage]]:
        """The ``k`` best passages for ``query``, best first (none that share no term)."""
        q = set(words(query))
        scored = []
        for i, terms in enumerate(self._terms):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self._lengths[i] / self._avg)
            score = sum(self.idf[t] * terms[t] * (BM25_K1 + 1) / (terms[t] + norm) for t in q if t in terms)
            if score > 0:
                scored.append((score, i))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [(round(score, 3), self.passages[i]) for score, i in scored[:k]]


def sentences(passage: Passage) -> list[str]:
    """A passage's section heading (it often holds the fact: "Tessellate 3.3.0, codename
    Juniper"), then its sentences, a list item being one; whitespace and Markdown marks
    removed, a bold lead-in ("**Hiring.** We hire") made a label ("Hiring: We hire")."""
    text = re.sub(r"\n(?!\s*(?:-|\d+\.)\s)", " ", passage.text)  # join wrapped lines, keep list items
    text = re.sub(r"\*\*(.+?)\.?\*\*", r"\1:", text).replace("`", "")
    found = [passage.section] if passage.section else []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:-|\d+\.)\s+", "", line)
        found += [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", line) if s.strip()]
    return found


def evidence(question: str, hits: list[tuple[float, Passage]], index: SearchIndex,
             n: int = EVIDENCE) -> list[tuple[str, str]]:
    """The ``n`` sentences of the passages found that share the most (idf-weighted) terms
    with the question, as (document, sentence) in the passages' order. SmolLM2-135M copied
    the fact asked for from three such lines twice as often as from the three paragraphs
    (4 of 17 questions right from paragraphs, 7 to 9 from sentences); a heading shown as a
    label of each sentence instead did worse (17 against 22 of 51, over three prompts)."""
    asked = set(words(question))
    scored = []
    for rank, (_, passage) in enumerate(hits):
        for i, sentence in enumerate(dict.fromkeys(sentences(passage))):
            weight = sum(index.idf.get(t, 0.0) for t in asked.intersection(words(sentence)))
            scored.append((-weight, rank, i, passage.doc, sentence))
    best = sorted(scored)[:n]
    return [(doc, sentence) for *_, doc, sentence in sorted(best, key=lambda b: (b[1], b[2]))]


def prompt(question: str, facts: list[tuple[str, str]]) -> list[dict[str, str]]:
    lines = "\n".join(f"- {sentence} ({doc})" for doc, sentence in facts) or "(none found)"
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Facts:\n{lines}\n\nQuestion: {question}"}]


def _clip(text: str, chars: int = ATTRIBUTE_CHARS) -> str:
    return text if len(text) <= chars else text[:chars] + "…"


class Telemetry:
    """The agent's own providers: OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` when set (spans,
    and the OpenAI instrumentation's message events as logs); else spans go nowhere and the
    client is left uninstrumented (a faster start)."""

    def __init__(self, endpoint: str | None) -> None:
        self.logger_provider: Any = None
        if endpoint:
            self.tracer_provider, self.logger_provider = providers(endpoint, AGENT, EXPORT_TIMEOUT_S)
            os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=self.tracer_provider, logger_provider=self.logger_provider)
        else:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider

            self.tracer_provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
        self.tracer = self.tracer_provider.get_tracer("otelbench.research_agent")

    def parent(self) -> Any:
        """The context of ``TRACEPARENT`` (W3C Trace Context), or None: a trace of our own."""
        carrier = {k.lower(): os.environ[k] for k in ("TRACEPARENT", "TRACESTATE") if os.environ.get(k)}
        if not carrier:
            return None
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        return TraceContextTextMapPropagator().extract(carrier)

    def flush(self) -> None:
        for provider in (self.tracer_provider, self.logger_provider):
            if provider is not None:
                provider.force_flush(EXPORT_TIMEOUT_S * 1000)
                provider.shutdown()


class ModelFailed(RuntimeError):
    """The model could not be reached, or answered with an error."""


def answer(question: str, index: SearchIndex, client: Any, model: str | None, telemetry: Telemetry,
           top: int = TOP_K) -> str:
    """One run: search, then ask the model to answer from what was found."""
    import openai
    from opentelemetry.trace import Status, StatusCode

    tracer = telemetry.tracer
    with tracer.start_as_current_span(f"invoke_agent {AGENT}", context=telemetry.parent(), attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT,
            "gen_ai.input.messages": genai_messages("user", question)}) as run:
        with tracer.start_as_current_span("execute_tool search_docs", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_docs",
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.arguments": _clip(json.dumps({"query": question, "k": top}))}) as tool:
            hits = index.search(question, top)
            tool.set_attribute("gen_ai.tool.call.result", _clip(json.dumps(
                [{"doc": p.doc, "section": p.section, "score": s, "text": p.text} for s, p in hits])))
        messages = prompt(question, evidence(question, hits, index))
        try:
            model = model or client.models.list().data[0].id
            reply = client.chat.completions.create(model=model, messages=messages, temperature=0,
                                                   max_tokens=MAX_TOKENS, stop=STOP)
        except openai.APIError as exc:
            why = "is unreachable" if isinstance(exc, openai.APIConnectionError) else f"failed: {exc}"
            run.set_status(Status(StatusCode.ERROR, f"the model {why}"[:1000]))
            run.set_attribute("error.type", type(exc).__name__)
            raise ModelFailed(f"the model at {client.base_url} {why}".splitlines()[0][:300]) from exc
        text = (reply.choices[0].message.content or "").strip()
        run.set_attribute("gen_ai.request.model", model)
        run.set_attribute("gen_ai.output.messages", genai_messages("assistant", text))
        return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m otelbench.demo.research_agent", description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=Path, help="folder of Markdown documents (default: $OTELBENCH_SUITE_DIR/docs)")
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    ap.add_argument("--model", help="model name (default: $OTELBENCH_MODEL, else the server's first model)")
    ap.add_argument("--top", type=int, default=TOP_K, help="passages search_docs returns (default: %(default)s)")
    args = ap.parse_args(argv)
    question = (sys.stdin.read() if not sys.stdin.isatty() else "").strip() or os.environ.get(
        "OTELBENCH_CASE_INPUT", "").strip()
    docs = args.docs or (Path(os.environ["OTELBENCH_SUITE_DIR"]) / "docs" if os.environ.get("OTELBENCH_SUITE_DIR")
                         else None)
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL")
    needed = (("a question (stdin or OTELBENCH_CASE_INPUT)", question),
              ("the documents (--docs or OTELBENCH_SUITE_DIR)", docs),
              ("the model's endpoint (--base-url or OPENAI_BASE_URL)", base_url))
    missing = [what for what, value in needed if not value]
    if missing or not docs.is_dir():
        print(f"research-agent: missing {', '.join(missing) or f'{docs}, a folder of documents'}", file=sys.stderr)
        return 2
    index = SearchIndex(read_passages(docs))
    telemetry = Telemetry(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or "none", max_retries=0,
                           timeout=120)
    try:
        text = answer(question, index, client, args.model or os.environ.get("OTELBENCH_MODEL"), telemetry, args.top)
    except ModelFailed as exc:
        print(f"research-agent: {exc}", file=sys.stderr)
        return 2
    finally:
        telemetry.flush()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
