"""Test helpers shipped with otelbench, the way httpx ships ``MockTransport`` and the OTel
SDK an in-memory exporter. The test suite and the ``benchmarks/`` scripts import them
from here (benchmarks never import ``tests/``):

- ``otlp``: AnyValue/KeyValue builders and OTLP request makers (agent traces, log events);
- ``rows``: lake rows with sensible defaults, for ``Lake.write_batch``;
- ``collector``: a collector config on free ports with its lake and log under a folder;
- ``openai_stub``: a scripted OpenAI-compatible server (streams, stalls, errors);
- ``otlp_capture``: an OTLP capture server and OTLP/JSON conversion (the recorders);
- ``frameworks``: the recorded agent-framework runs through the lake beside their
  expected.json (scripts/compare_frameworks.py, tests/test_frameworks.py);
- ``failures``: planted failure families (paraphrased errors, tool errors, answers) with
  noise and successes, for the clustering tests and benchmarks/cluster.py;
- ``paraphrases``: paraphrases of a failure against look-alikes sharing its words, the
  embedder's separation figure;
- ``wait``: ``wait_for(condition)``, the one poll on explicit state.
"""
