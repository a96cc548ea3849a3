"""OTLP → the lake's rows: every mapping from what SDKs send to ``storage.schema``'s tables.

Pure (OTLP in, columns out, no I/O) and imported by the flusher processes
(``exporters/parquet.py``). Entry points:

- ``normalize.columnar.normalize_traces_arrow(payloads, owners)``: serialized trace
  requests → one spans ``pyarrow.Table``, a whole batch at once (protobuf → Arrow with
  ``normalize.wire``, C without Python's lock (``_wire.pyx``; ptars where it is not
  built) → polars); ``columnar_attributes``, ``columnar_genai`` and ``columnar_messages``
  (its canonical check in C: ``_messages.pyx``) are its parts, ``warm_up`` pays its
  first-call costs.
- ``normalize.rows.normalize_traces`` / ``normalize_logs`` / ``normalize_metrics(request,
  owner)``: one decoded request → ``{column: values}``, item by item. The path for logs,
  metrics and the spans the columnar path cannot vectorize, and the oracle the columnar
  path is differentially tested against.
- ``normalize.conventions``: the GenAI convention tables (``ALIASES``, operation, span
  type, provider, what frameworks keep in JSON documents) and the rules both paths apply.
- ``normalize.messages`` (one message shape), ``normalize.message_sources`` (where each
  convention keeps messages), ``normalize.framework_messages`` (a run's input and output
  in agent frameworks' shapes), ``normalize.anyvalue`` (OTLP values → Python),
  ``normalize.pricing`` (``prices.json``, the cost of a call).
- ``normalize.requests.REQUEST_TYPES``: the request class of each signal.

This file imports nothing, and ``requests`` only protobuf classes: the receiver process
imports ``normalize.requests`` and must not load polars, pyarrow or numpy
(tests/test_layering.py). The rules, field by field: docs/normalization.md.
"""
