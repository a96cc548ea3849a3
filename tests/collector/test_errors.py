"""collector.errors: every receiver error → (HTTP status, gRPC code, retryable, Retry-After), as one table."""

from __future__ import annotations

import grpc
import pytest

from otelbench.collector import errors
from otelbench.collector.errors import ReceiverError, grpc_status, http_status

RETRY_AFTER_S = 7

# class → (HTTP status, gRPC status, retried by OTLP clients); a retryable error carries the
# Retry-After delay (RetryInfo on gRPC), a permanent one none. The README's "What the
# receiver answers" table is the same mapping, seen from the client.
TABLE = {
    ReceiverError: (500, grpc.StatusCode.INTERNAL, False),
    errors.MalformedRequest: (400, grpc.StatusCode.INVALID_ARGUMENT, False),
    errors.Unauthenticated: (401, grpc.StatusCode.UNAUTHENTICATED, False),
    errors.Forbidden: (403, grpc.StatusCode.PERMISSION_DENIED, False),
    errors.NotFound: (404, grpc.StatusCode.UNIMPLEMENTED, False),
    errors.MethodNotAllowed: (405, grpc.StatusCode.UNIMPLEMENTED, False),
    errors.PayloadTooLarge: (413, grpc.StatusCode.RESOURCE_EXHAUSTED, False),
    errors.UnsupportedMediaType: (415, grpc.StatusCode.INVALID_ARGUMENT, False),
    # UNAVAILABLE, not RESOURCE_EXHAUSTED: OTLP gRPC clients retry the latter only with RetryInfo
    errors.TooManyRequests: (429, grpc.StatusCode.UNAVAILABLE, True),
    errors.Unavailable: (503, grpc.StatusCode.UNAVAILABLE, True),
    # a key's quota: retried only after the RetryInfo delay (the window's reset), not at once
    errors.QuotaExceeded: (429, grpc.StatusCode.RESOURCE_EXHAUSTED, True),
}


def _all_subclasses(cls: type) -> set[type]:
    found = {cls}
    for sub in cls.__subclasses__():
        found |= _all_subclasses(sub)
    return found


def test_the_table_covers_every_receiver_error():
    """A new error class needs its row here (and its line in the README's table)."""
    defined = {c for c in _all_subclasses(ReceiverError) if c.__module__ == errors.__name__}
    assert defined == set(TABLE), sorted(c.__name__ for c in defined ^ set(TABLE))


@pytest.mark.parametrize("cls", list(TABLE), ids=lambda c: c.__name__)
def test_error_maps_to_its_http_and_grpc_status(cls):
    status, code, retryable = TABLE[cls]
    err = cls("why", RETRY_AFTER_S if retryable else None)
    assert cls.retryable is retryable
    assert http_status(err) == (status, {"Retry-After": str(RETRY_AFTER_S)} if retryable else {})
    assert grpc_status(err) is code
    assert err.grpc_code == code.value[0]  # the code in the google.rpc.Status body
    assert str(err) == "why"

