"""Test helpers shipped with otelbench, the way httpx ships ``MockTransport`` and the OTel
SDK an in-memory exporter. The test suite and the ``benchmarks/`` scripts import them
from here (benchmarks never import ``tests/``):

- ``otlp``: AnyValue/KeyValue builders and OTLP request makers (agent traces, log events);
- ``rows``: lake rows with sensible defaults, for ``Lake.write_batch``;
- ``collector``: a collector config on free ports with its lake and log under a folder;
- ``openai_stub``: a scripted OpenAI-compatible server (streams, stalls, errors);
- ``wait``: ``wait_for(condition)``, the one poll on explicit state.
"""
