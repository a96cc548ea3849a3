"""Write the judge's labelled calibration set: one OTLP/JSON trace per agent run.

    .venv/bin/python scripts/make_judge_calibration.py [--out tests/data/judge_calibration]

Each case below is one agent run a person labelled: ``good`` (1) or ``bad`` (0), its
category (``correct``, ``recovered`` — a tool failed and the agent still got it right —,
``wrong`` — a confident, wrong answer —, ``refusal``, ``partial``, ``error``) and whether
the label is clear-cut (partial answers are not: how much is missing is a matter of
degree). The runs are realistic tasks — arithmetic, lookups with and without tools, JSON
extraction, summaries, small code and language tasks — written the way the GenAI
semantic conventions put them on spans: an ``invoke_agent`` root, ``chat`` spans with
``gen_ai.input.messages`` / ``gen_ai.output.messages``, ``execute_tool`` spans with the
call's arguments and result (an error status for a failed tool). About half the roots
carry the run's input and output themselves, the others leave them to the chat spans, as
frameworks differ there (docs/schema.md, ``agent_runs``).

Writes ``traces/<case>.json`` (an ``ExportTraceServiceRequest`` in OTLP/JSON, hex ids)
and ``labels.json``. Deterministic: ids are hashes of the case name, times fixed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "data" / "judge_calibration"
BASE_NS = 1_717_200_000_000_000_000  # 2024-06-01T00:00:00Z
MODEL = "gpt-4o-mini"


@dataclass(frozen=True)
class Tool:
    name: str
    arguments: dict[str, Any]
    result: str | None = None  # what the tool returned
    error: str | None = None  # the tool span's error status message


@dataclass(frozen=True)
class Case:
    name: str
    agent: str
    category: str  # correct | recovered | wrong | refusal | partial | error
    kind: str  # arithmetic | lookup | extraction | summary | code | language
    task: str
    output: str | None
    tools: tuple[Tool, ...] = ()
    error: str | None = None  # the root span's error status (the run failed)
    note: str = ""
    system: str = "You are a helpful assistant. Answer concisely."
    clear_cut: bool = field(default=True)

    @property
    def label(self) -> int:
        return 1 if self.category in ("correct", "recovered") else 0


def C(name: str, agent: str, category: str, kind: str, task: str, output: str | None, *tools: Tool,
      error: str | None = None, note: str = "", clear_cut: bool | None = None) -> Case:
    return Case(name, agent, category, kind, task, output, tuple(tools), error, note,
                clear_cut=category != "partial" if clear_cut is None else clear_cut)


WEATHER_PARIS = '{"city": "Paris", "temperature_c": 14, "conditions": "light rain", "wind_kmh": 18}'
ORDER_A1043 = '{"order_id": "A1043", "status": "shipped", "carrier": "DHL", "eta": "2024-06-12"}'
STOCK_ACME = '{"symbol": "ACME", "price": 182.40, "currency": "USD", "change_pct": -1.2}'
DOC_RESET = ("Account > Security > Reset password. Enter your current email, then follow the link we "
             "send you; the link expires after 30 minutes.")
FX_EURUSD = '{"pair": "EUR/USD", "rate": 1.0850}'
FLIGHT_LH = '{"flight": "LH1234", "status": "delayed", "new_departure": "16:45", "gate": "B22"}'

MEETING = ("Notes from the Q3 planning meeting: the mobile app launch moves from October 3 to October 17 "
           "because the new payment integration failed its security review. Marketing pauses the campaign "
           "until the new date, and Priya will re-run the review on October 10.")
INCIDENT = ("At 02:14 UTC the primary database ran out of disk space and rejected writes for 23 minutes, "
            "until the on-call engineer expanded the volume. Reads kept working throughout. No data was lost; "
            "we are adding a disk-usage alert at 80%.")
EMAIL = ("Hi team, the invoice for May (INV-2291, $4,300) was paid twice by mistake. Please refund the "
         "duplicate payment to the card ending 4417 and confirm by Friday. Thanks, Dana")
STUDY = ("A two-year study of 1,200 office workers found that those who took a 10-minute walk after lunch "
         "reported 18% less afternoon fatigue than those who stayed at their desks. The effect was larger "
         "for people over 50. The authors caution that fatigue was self-reported.")

CASES: tuple[Case, ...] = (
    # -- arithmetic ----------------------------------------------------------------------
    C("arith-mul-ok", "calc-agent", "correct", "arithmetic", "What is 17 × 23?", "17 × 23 = 391."),
    C("arith-mul-wrong", "calc-agent", "wrong", "arithmetic", "What is 17 × 23?", "17 × 23 = 381."),
    C("arith-discount-ok", "calc-agent", "correct", "arithmetic",
      "A jacket costs $80 and is 25% off. What is the sale price?",
      "25% of $80 is $20, so the sale price is $60."),
    C("arith-discount-wrong", "calc-agent", "wrong", "arithmetic",
      "A jacket costs $80 and is 25% off. What is the sale price?",
      "The sale price is $55 after the 25% discount."),
    C("arith-percent-ok", "calc-agent", "correct", "arithmetic", "What is 15% of 240?", "15% of 240 is 36."),
    C("arith-percent-wrong", "calc-agent", "wrong", "arithmetic", "What is 15% of 240?", "15% of 240 is 32."),
    C("arith-minutes-ok", "calc-agent", "correct", "arithmetic", "How many minutes are there in 3.5 hours?",
      "3.5 hours is 210 minutes."),
    C("arith-minutes-wrong", "calc-agent", "wrong", "arithmetic", "How many minutes are there in 3.5 hours?",
      "There are 350 minutes in 3.5 hours."),
    C("arith-average-ok", "calc-agent", "correct", "arithmetic", "What is the average of 12, 15 and 21?",
      "(12 + 15 + 21) / 3 = 48 / 3 = 16."),
    C("arith-power-wrong", "calc-agent", "wrong", "arithmetic", "What is 2 to the power of 10?",
      "2 to the power of 10 is 1000."),
    C("arith-power-ok", "calc-agent", "correct", "arithmetic", "What is 2 to the power of 10?",
      "2^10 = 1024."),
    C("arith-speed-wrong", "calc-agent", "wrong", "arithmetic",
      "How long does it take to drive 150 km at 60 km/h?", "It takes 3 hours."),
    C("arith-calc-tool-ok", "calc-agent", "correct", "arithmetic", "What is 1,234 × 56?",
      "1,234 × 56 = 69,104.", Tool("calculator", {"expression": "1234*56"}, "69104")),
    C("arith-calc-tool-misread", "calc-agent", "wrong", "arithmetic", "What is 1,234 × 56?",
      "1,234 × 56 = 96,104.", Tool("calculator", {"expression": "1234*56"}, "69104"),
      note="the tool said 69104; the answer swapped two digits"),
    C("arith-calc-recovered", "calc-agent", "recovered", "arithmetic", "What is 987 + 2,468?",
      "987 + 2,468 = 3,455.",
      Tool("calculator", {"expression": "987 + 2,468"}, error="SyntaxError: invalid syntax at ','"),
      Tool("calculator", {"expression": "987 + 2468"}, "3455")),
    C("arith-fahrenheit-wrong", "calc-agent", "wrong", "arithmetic", "Convert 100 °F to Celsius.",
      "100 °F is about 42.2 °C."),
    # -- lookups: general knowledge ------------------------------------------------------
    C("fact-capital-ok", "geo-agent", "correct", "lookup", "What is the capital of Australia?",
      "The capital of Australia is Canberra."),
    C("fact-capital-wrong", "geo-agent", "wrong", "lookup", "What is the capital of Australia?",
      "The capital of Australia is Sydney."),
    C("fact-austen-ok", "trivia-bot", "correct", "lookup", "Who wrote Pride and Prejudice?",
      "Pride and Prejudice was written by Jane Austen, published in 1813."),
    C("fact-austen-wrong", "trivia-bot", "wrong", "lookup", "Who wrote Pride and Prejudice?",
      "Pride and Prejudice was written by Charlotte Brontë in 1847."),
    C("fact-gold-ok", "trivia-bot", "correct", "lookup", "What is the chemical symbol for gold?",
      "The chemical symbol for gold is Au."),
    C("fact-gold-wrong", "trivia-bot", "wrong", "lookup", "What is the chemical symbol for gold?",
      "The chemical symbol for gold is Ag."),
    C("fact-planets-ok", "trivia-bot", "correct", "lookup", "How many planets are in our solar system?",
      "There are eight planets in our solar system."),
    C("fact-wall-wrong", "trivia-bot", "wrong", "lookup", "In which year did the Berlin Wall fall?",
      "The Berlin Wall fell in 1991."),
    C("fact-wall-ok", "trivia-bot", "correct", "lookup", "In which year did the Berlin Wall fall?",
      "The Berlin Wall fell in 1989, on November 9."),
    C("fact-ocean-wrong", "geo-agent", "wrong", "lookup", "What is the largest ocean on Earth?",
      "The Atlantic Ocean is the largest ocean on Earth."),
    C("fact-ocean-ok", "geo-agent", "correct", "lookup", "What is the largest ocean on Earth?",
      "The Pacific Ocean is the largest ocean on Earth."),
    C("fact-japan-ok", "geo-agent", "correct", "lookup", "What is the capital of Japan?",
      "Tokyo is the capital of Japan."),
    # -- lookups: tools ------------------------------------------------------------------
    C("tool-weather-ok", "weather-agent", "correct", "lookup", "What's the weather in Paris right now?",
      "It's 14 °C in Paris with light rain and wind around 18 km/h.",
      Tool("get_weather", {"city": "Paris"}, WEATHER_PARIS)),
    C("tool-weather-wrong", "weather-agent", "wrong", "lookup", "What's the weather in Paris right now?",
      "It's sunny and 24 °C in Paris, a great day to be outside.",
      Tool("get_weather", {"city": "Paris"}, WEATHER_PARIS), note="contradicts the tool's result"),
    C("tool-weather-recovered", "weather-agent", "recovered", "lookup", "What's the weather in Paris right now?",
      "Paris: 14 °C, light rain, wind 18 km/h.",
      Tool("get_weather", {"city": "Paris"}, error="TimeoutError: weather API did not answer within 5s"),
      Tool("get_weather", {"city": "Paris"}, WEATHER_PARIS)),
    C("tool-weather-refusal", "weather-agent", "refusal", "lookup", "What's the weather in Paris right now?",
      "I'm sorry, but as an AI language model I don't have access to real-time weather information."),
    C("tool-order-ok", "orders-agent", "correct", "lookup", "Where is my order A1043?",
      "Your order A1043 has shipped with DHL and should arrive by June 12, 2024.",
      Tool("lookup_order", {"order_id": "A1043"}, ORDER_A1043)),
    C("tool-order-wrong", "orders-agent", "wrong", "lookup", "Where is my order A1043?",
      "Good news: your order A1043 was delivered yesterday.",
      Tool("lookup_order", {"order_id": "A1043"}, ORDER_A1043)),
    C("tool-order-recovered", "orders-agent", "recovered", "lookup", "Where is my order A1043?",
      "Order A1043 is on its way: shipped via DHL, expected June 12.",
      Tool("lookup_order", {"order_id": "a1043"}, error="ValueError: order id must be upper case, e.g. A1043"),
      Tool("lookup_order", {"order_id": "A1043"}, ORDER_A1043)),
    C("tool-order-error", "orders-agent", "error", "lookup", "Where is my order A1043?", None,
      Tool("lookup_order", {"order_id": "A1043"}, error="ConnectionError: orders-db: connection refused"),
      error="ConnectionError: orders-db: connection refused"),
    C("tool-stock-ok", "finance-agent", "correct", "lookup", "What is ACME's share price?",
      "ACME is trading at $182.40, down 1.2% today.",
      Tool("get_stock_price", {"symbol": "ACME"}, STOCK_ACME)),
    C("tool-stock-recovered", "finance-agent", "recovered", "lookup", "What is ACME's share price?",
      "ACME trades at 182.40 USD (-1.2%).",
      Tool("get_stock_price", {"symbol": "ACME"}, error="HTTP 503 from quotes API"),
      Tool("get_stock_price", {"symbol": "ACME"}, STOCK_ACME)),
    C("tool-stock-refusal", "finance-agent", "refusal", "lookup", "What is ACME's share price?",
      "I can't provide financial information or stock prices. Please consult a licensed financial advisor."),
    C("tool-fx-ok", "finance-agent", "correct", "arithmetic", "How many US dollars is 200 euros today?",
      "At today's rate of 1.0850, 200 EUR is 217.00 USD.",
      Tool("get_fx_rate", {"pair": "EUR/USD"}, FX_EURUSD)),
    C("tool-fx-wrong", "finance-agent", "wrong", "arithmetic", "How many US dollars is 200 euros today?",
      "200 EUR is 184.33 USD at today's rate.", Tool("get_fx_rate", {"pair": "EUR/USD"}, FX_EURUSD),
      note="divided by the rate instead of multiplying"),
    C("tool-docs-ok", "support-bot", "correct", "lookup", "How do I reset my password?",
      "Go to Account > Security > Reset password, enter your email and follow the link we send you "
      "(it expires after 30 minutes).", Tool("search_docs", {"query": "reset password"}, DOC_RESET)),
    C("tool-docs-wrong", "support-bot", "wrong", "lookup", "How do I reset my password?",
      "To reset your password, call our support line at 1-800-555-0199 and an agent will reset it for you.",
      Tool("search_docs", {"query": "reset password"}, DOC_RESET), note="ignores the docs it found"),
    C("tool-docs-recovered", "support-bot", "recovered", "lookup", "How do I reset my password?",
      "Open Account > Security > Reset password, enter your email, then click the link in the email "
      "within 30 minutes.",
      Tool("search_docs", {"query": "reset password"}, error="search index unavailable (503)"),
      Tool("search_docs", {"query": "reset password"}, DOC_RESET)),
    C("tool-flight-ok", "travel-agent", "correct", "lookup", "Is flight LH1234 on time?",
      "No, LH1234 is delayed: it now departs at 16:45 from gate B22.",
      Tool("flight_status", {"flight": "LH1234"}, FLIGHT_LH)),
    C("tool-flight-wrong", "travel-agent", "wrong", "lookup", "Is flight LH1234 on time?",
      "Yes, LH1234 is on time and boards at gate B22.", Tool("flight_status", {"flight": "LH1234"}, FLIGHT_LH)),
    C("tool-flight-error", "travel-agent", "error", "lookup", "Is flight LH1234 on time?",
      "Error: flight_status failed (HTTP 502). Please try again later.",
      Tool("flight_status", {"flight": "LH1234"}, error="HTTP 502 Bad Gateway"),
      Tool("flight_status", {"flight": "LH1234"}, error="HTTP 502 Bad Gateway"),
      error="tool flight_status failed twice"),
    # -- JSON extraction -----------------------------------------------------------------
    C("json-contact-ok", "extractor", "correct", "extraction",
      "Extract name, email and phone as JSON: \"Hi, I'm Maria Lopez, reach me at maria.lopez@example.com "
      "or 555-0142.\"",
      '{"name": "Maria Lopez", "email": "maria.lopez@example.com", "phone": "555-0142"}'),
    C("json-contact-wrong", "extractor", "wrong", "extraction",
      "Extract name, email and phone as JSON: \"Hi, I'm Maria Lopez, reach me at maria.lopez@example.com "
      "or 555-0142.\"",
      '{"name": "Maria Lopez", "email": "mlopez@example.org", "phone": "555-0124"}'),
    C("json-contact-partial", "extractor", "partial", "extraction",
      "Extract name, email and phone as JSON: \"Hi, I'm Maria Lopez, reach me at maria.lopez@example.com "
      "or 555-0142.\"",
      '{"name": "Maria Lopez"}'),
    C("json-invoice-ok", "extractor", "correct", "extraction",
      "Return the invoice number, date, total and customer as JSON: \"Invoice #8812, issued 2024-03-05 to "
      "Acme Corp. Total due: $1,240.50.\"",
      '{"invoice_number": "8812", "date": "2024-03-05", "total": 1240.50, "customer": "Acme Corp"}'),
    C("json-invoice-wrong", "extractor", "wrong", "extraction",
      "Return the invoice number, date, total and customer as JSON: \"Invoice #8812, issued 2024-03-05 to "
      "Acme Corp. Total due: $1,240.50.\"",
      '{"invoice_number": "2024", "date": "2024-05-03", "total": 124.05, "customer": "Acme Corp"}'),
    C("json-flight-ok", "extractor", "correct", "extraction",
      "Extract the destination city and the date as JSON: \"Your flight to Lisbon departs on May 14 at 07:30.\"",
      '{"city": "Lisbon", "date": "May 14"}'),
    C("json-flight-wrong", "extractor", "wrong", "extraction",
      "Extract the destination city and the date as JSON: \"Your flight to Lisbon departs on May 14 at 07:30.\"",
      '{"city": "Madrid", "date": "May 7"}'),
    C("json-product-ok", "extractor", "correct", "extraction",
      "Extract name, price, currency and colors as JSON: \"The UltraBlend 3000 costs 89.99 EUR and comes in "
      "red and black.\"",
      '{"name": "UltraBlend 3000", "price": 89.99, "currency": "EUR", "colors": ["red", "black"]}'),
    C("json-product-partial", "extractor", "partial", "extraction",
      "Extract name, price, currency and colors as JSON: \"The UltraBlend 3000 costs 89.99 EUR and comes in "
      "red and black.\"",
      '{"name": "UltraBlend 3000", "price": 89.99}'),
    C("json-refusal", "extractor", "refusal", "extraction",
      "Extract the sender's name and the amount as JSON: \"Transfer of $250 received from Tom Becker.\"",
      "I'm sorry, but I can't help with extracting personal or financial information."),
    C("json-error", "extractor", "error", "extraction",
      "Extract the sender's name and the amount as JSON: \"Transfer of $250 received from Tom Becker.\"",
      None, error="openai.RateLimitError: Error code: 429 - rate limit exceeded"),
    # -- summaries -----------------------------------------------------------------------
    C("sum-meeting-ok", "summarizer", "correct", "summary", f"Summarize in one sentence:\n\n{MEETING}",
      "The app launch slips from October 3 to October 17 after the payment integration failed its security "
      "review, so marketing pauses the campaign and Priya re-runs the review on October 10."),
    C("sum-meeting-wrong", "summarizer", "wrong", "summary", f"Summarize in one sentence:\n\n{MEETING}",
      "The app launch was moved forward to September 17 because the payment integration passed its security "
      "review early."),
    C("sum-meeting-partial", "summarizer", "partial", "summary", f"Summarize in one sentence:\n\n{MEETING}",
      "The launch moves to October 17."),
    C("sum-incident-ok", "summarizer", "correct", "summary", f"Summarize this incident for a status page:\n\n{INCIDENT}",
      "A full disk on the primary database blocked writes for 23 minutes (reads were fine); the volume was "
      "expanded, no data was lost, and an 80% disk alert is being added."),
    C("sum-incident-wrong", "summarizer", "wrong", "summary", f"Summarize this incident for a status page:\n\n{INCIDENT}",
      "A network outage took the whole site down for 3 hours and some customer data was lost."),
    C("sum-email-ok", "summarizer", "correct", "summary", f"Summarize this email in one line:\n\n{EMAIL}",
      "Dana asks for a refund of the duplicate $4,300 payment of invoice INV-2291 to card 4417, confirmed by Friday."),
    C("sum-email-wrong", "summarizer", "wrong", "summary", f"Summarize this email in one line:\n\n{EMAIL}",
      "Dana says invoice INV-2291 has not been paid yet and asks the team to pay $4,300 by Friday."),
    C("sum-study-ok", "summarizer", "correct", "summary", f"Summarize the study's finding in one sentence:\n\n{STUDY}",
      "Office workers who walked for 10 minutes after lunch reported 18% less afternoon fatigue, especially those "
      "over 50, though fatigue was self-reported."),
    C("sum-study-refusal", "summarizer", "refusal", "summary",
      f"Summarize the study's finding in one sentence:\n\n{STUDY}",
      "I'm sorry, I cannot summarize medical research. Please consult a healthcare professional."),
    C("sum-study-partial", "summarizer", "partial", "summary",
      f"Summarize the study's finding in one sentence:\n\n{STUDY}",
      "A two-year study of 1,200 office"),
    C("sum-incident-error", "summarizer", "error", "summary", f"Summarize this incident for a status page:\n\n{INCIDENT}",
      None, error="context_length_exceeded: maximum context length is 4096 tokens"),
    # -- code and language ---------------------------------------------------------------
    C("code-reverse-ok", "code-helper", "correct", "code",
      "In Python, how do I reverse a string s?", "Use slicing: `s[::-1]` returns the reversed string."),
    C("code-reverse-wrong", "code-helper", "wrong", "code",
      "In Python, how do I reverse a string s?", "Call `s.reverse()`; it returns the reversed string."),
    C("code-sort-ok", "code-helper", "correct", "code", "Sort these numbers in ascending order: 5, 2, 9, 1, 7",
      "1, 2, 5, 7, 9"),
    C("code-sort-wrong", "code-helper", "wrong", "code", "Sort these numbers in ascending order: 5, 2, 9, 1, 7",
      "1, 2, 7, 5, 9"),
    C("code-prime-wrong", "code-helper", "wrong", "code", "Is 97 a prime number?",
      "No. 97 is divisible by 7, so it is not prime."),
    C("code-prime-ok", "code-helper", "correct", "code", "Is 97 a prime number?",
      "Yes, 97 is prime: it has no divisors other than 1 and itself."),
    C("code-len-partial", "code-helper", "partial", "code",
      "In Python, how do I get the number of items in a list and the last item?",
      "Use `len(items)` to get the number of items."),
    C("lang-spanish-ok", "translator", "correct", "language", "Translate 'good morning' into Spanish.",
      "'Good morning' in Spanish is 'buenos días'."),
    C("lang-spanish-wrong", "translator", "wrong", "language", "Translate 'good morning' into Spanish.",
      "'Good morning' in Spanish is 'buenas noches'."),
    C("lang-french-ok", "translator", "correct", "language", "Translate 'thank you very much' into French.",
      "Merci beaucoup."),
    C("lang-refusal", "translator", "refusal", "language", "Translate 'thank you very much' into French.",
      "I'm not able to help with that."),
    C("lang-colors-partial", "trivia-bot", "partial", "lookup", "Name the three primary colors of light.",
      "Red and green."),
    C("lang-error", "translator", "error", "language", "Translate 'good morning' into Spanish.", "",
      error="upstream model returned an empty completion"),
    C("code-refusal", "code-helper", "refusal", "code", "Sort these numbers in ascending order: 5, 2, 9, 1, 7",
      "As an AI, I cannot perform that task."),
    C("fact-capital-partial", "geo-agent", "partial", "lookup",
      "What is the capital of Canada, and which province is it in?", "The capital of Canada is Ottawa."),
    C("fact-capital-error", "geo-agent", "error", "lookup", "What is the capital of Canada?", None,
      error="APITimeoutError: request timed out after 60s"),
)


# -- OTLP/JSON ------------------------------------------------------------------------------


def _id(case: str, what: str, n_bytes: int) -> str:
    return hashlib.sha256(f"{case}/{what}".encode()).hexdigest()[: 2 * n_bytes]


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": str(v)} for v in value]}}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _msg(role: str, *parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "parts": list(parts)}
    if finish:
        m["finish_reason"] = finish
    return m


def _text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _json(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


def _tokens(messages: list[dict[str, Any]]) -> int:
    return max(1, len(_json(messages)) // 4)


def trace(case: Case, index: int) -> dict[str, Any]:
    """One run as an OTLP/JSON ``ExportTraceServiceRequest``."""
    trace_id = _id(case.name, "trace", 16)
    root_id = _id(case.name, "root", 8)
    t0 = BASE_NS + index * 60_000_000_000
    t = t0 + 5_000_000
    spans: list[dict[str, Any]] = []
    history = [_msg("system", _text(case.system)), _msg("user", _text(case.task))]

    def span(name: str, kind: int, attrs: list[dict[str, Any]], ms: int, error: str | None = None) -> None:
        nonlocal t
        n = len(spans)
        s: dict[str, Any] = {"traceId": trace_id, "spanId": _id(case.name, f"span{n}", 8), "parentSpanId": root_id,
                             "name": name, "kind": kind, "startTimeUnixNano": str(t),
                             "endTimeUnixNano": str(t + ms * 1_000_000), "attributes": attrs}
        if error:
            s["status"] = {"code": 2, "message": error}
        spans.append(s)
        t += (ms + 3) * 1_000_000

    def chat(out: list[dict[str, Any]], finish: str, error: str | None = None) -> None:
        attrs = [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.provider.name", "openai"),
                 _attr("gen_ai.request.model", MODEL), _attr("gen_ai.response.model", f"{MODEL}-2024-07-18"),
                 _attr("gen_ai.agent.name", case.agent), _attr("gen_ai.input.messages", _json(history)),
                 _attr("gen_ai.usage.input_tokens", _tokens(history))]
        if out:
            attrs += [_attr("gen_ai.output.messages", _json(out)), _attr("gen_ai.usage.output_tokens", _tokens(out)),
                      _attr("gen_ai.response.finish_reasons", [finish])]
        span(f"chat {MODEL}", 3, attrs, 420 + 37 * len(spans), error)

    for k, tool in enumerate(case.tools):
        call_id = f"call_{_id(case.name, f'call{k}', 6)}"
        call = {"type": "tool_call", "id": call_id, "name": tool.name, "arguments": tool.arguments}
        ask = [_msg("assistant", call, finish="tool_call")]
        chat(ask, "tool_call")
        attrs = [_attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", tool.name),
                 _attr("gen_ai.tool.call.id", call_id), _attr("gen_ai.agent.name", case.agent),
                 _attr("gen_ai.tool.call.arguments", json.dumps(tool.arguments, ensure_ascii=False))]
        if tool.result is not None:
            attrs.append(_attr("gen_ai.tool.call.result", tool.result))
        span(f"execute_tool {tool.name}", 1, attrs, 90 + 11 * k, tool.error)
        history = history + ask + [_msg("tool", {"type": "tool_call_response", "id": call_id,
                                                  "response": tool.result if tool.error is None else tool.error})]
    final = [_msg("assistant", _text(case.output), finish="stop")] if case.output else []
    if case.output is not None or case.error is None:
        chat(final, "stop")
    elif not case.tools:  # the model call itself failed
        chat([], "stop", case.error)
    root_attrs = [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", case.agent)]
    if index % 2 == 0:  # half the frameworks put the run's input and output on the agent span
        root_attrs.append(_attr("gen_ai.input.messages", _json([_msg("user", _text(case.task))])))
        if final:
            root_attrs.append(_attr("gen_ai.output.messages", _json(final)))
    root: dict[str, Any] = {"traceId": trace_id, "spanId": root_id, "name": f"invoke_agent {case.agent}",
                            "kind": 1, "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t + 2_000_000),
                            "attributes": root_attrs}
    if case.error:
        root["status"] = {"code": 2, "message": case.error}
    resource = {"attributes": [_attr("service.name", f"{case.agent}-svc"), _attr("telemetry.sdk.language", "python")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [
        {"scope": {"name": "otelbench.judge_calibration", "version": "1"}, "spans": [root, *spans]}]}]}


def label(case: Case) -> dict[str, Any]:
    return {"trace_id": _id(case.name, "trace", 16), "label": case.label, "category": case.category,
            "kind": case.kind, "clear_cut": case.clear_cut, "agent": case.agent, "note": case.note}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    folder = args.out / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    for i, case in enumerate(CASES):
        (folder / f"{case.name}.json").write_text(json.dumps(trace(case, i), indent=1, ensure_ascii=False) + "\n")
    labels = {c.name: label(c) for c in CASES}
    (args.out / "labels.json").write_text(json.dumps(labels, indent=1, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for c in CASES:
        counts[c.category] = counts.get(c.category, 0) + 1
    print(f"{len(CASES)} runs ({sum(c.label for c in CASES)} good) → {args.out}: {counts}")


if __name__ == "__main__":
    main()
