"""The capture server keeps each body as sent, however the exporter frames it: sized by
Content-Length (the Python SDK) or chunked (the OTel JS SDK's exporters), over a real socket."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.testing.otlp_capture import CaptureServer

PROTOBUF = {"Content-Type": "application/x-protobuf"}


@pytest.fixture(scope="module")
def capture() -> Iterator[CaptureServer]:
    with CaptureServer() as server:
        yield server


def post(capture: CaptureServer, name: str, body: bytes | list[bytes]) -> int:
    """POST ``body`` to ``<name>/v1/traces``: sized when bytes, chunked (one chunk per piece) when a list."""
    conn = http.client.HTTPConnection(capture.url.removeprefix("http://"), timeout=10)
    try:
        if isinstance(body, bytes):
            conn.request("POST", f"/{name}/v1/traces", body=body, headers=PROTOBUF)
        else:
            conn.request("POST", f"/{name}/v1/traces", body=iter(body), headers=PROTOBUF, encode_chunked=True)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@settings(max_examples=30, deadline=None)
@given(pieces=st.lists(st.binary(min_size=1, max_size=300), max_size=6))
def test_a_chunked_body_is_kept_whole(capture: CaptureServer, pieces: list[bytes]) -> None:
    name = f"chunked-{len(capture.bodies())}"
    assert post(capture, name, pieces) == 200
    assert capture.bodies(name) == [(name, "traces", b"".join(pieces))]


def test_a_sized_body_and_a_chunked_one_on_the_same_server(capture: CaptureServer) -> None:
    assert post(capture, "sized", b"\x0a\x00") == 200
    assert post(capture, "sized", [b"\x0a", b"\x01\x02"]) == 200
    assert capture.bodies("sized") == [("sized", "traces", b"\x0a\x00"), ("sized", "traces", b"\x0a\x01\x02")]
    assert capture.refused == []
