"""The recorded OTLP/JSON files of tests/testdata/recorded as protobuf requests
(``otelbench.testing.otlp_capture.parse_otlp_json`` reads each)."""

from __future__ import annotations

from pathlib import Path

from google.protobuf.message import Message

from otelbench.testing.otlp_capture import parse_otlp_json

RECORDED = Path(__file__).parent / "recorded"


def load(path: Path) -> Message:
    """A file named ``<signal>-<n>.json`` → its request."""
    signal = path.name.split("-", 1)[0]
    return parse_otlp_json(signal, path.read_text())


def recorded(instrumentation: str, signal: str) -> list[Message]:
    """Every recorded request of one signal from one instrumentation, in the order sent."""
    paths = sorted((RECORDED / instrumentation).glob(f"{signal}-*.json"), key=lambda p: int(p.stem.split("-")[-1]))
    return [load(p) for p in paths]
