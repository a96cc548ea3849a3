"""Test helpers shipped with otelbench, the way httpx ships ``MockTransport`` and the OTel
SDK an in-memory exporter: builders of OTLP payloads and lake rows, a scripted
OpenAI-compatible server, a collector config on free ports. The test suite and the
``benchmarks/`` scripts import them from here (benchmarks never import ``tests/``).
"""
