"""What was sent reads back as sent, at volume: random spans through the real SDK.

Sends ``--spans`` random spans (otelbench.testing.attribute_maps: every convention the
normalizer reads, plain attributes of every OTLP type, events, links, random resources and
scopes) with the OTel SDK to a collector on free ports, in requests of ``--batch`` spans,
the protocol turning over OTLP/HTTP protobuf, gRPC and OTLP/JSON; ``--logs`` log records
(every ``AnyValue`` kind) go along. Once everything is flushed it compacts the lake and
compares what was sent with the ``spans`` / ``logs`` views and the Parquet files read by
the documented rule, before and after the compaction (otelbench.testing.roundtrip).

Prints the differences found (0 is the promise), the spans sent per second (the SDK's
encoding included: a client-side figure, not the collector's capacity) and the seconds
each phase took. Exits 1 on any difference.

    .venv/bin/python benchmarks/roundtrip.py [--spans 10000] [--batch 500] [--logs 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.collector.wiring import Collector  # noqa: E402
from otelbench.testing import attribute_maps as am  # noqa: E402
from otelbench.testing.collector import collector_config  # noqa: E402
from otelbench.testing.roundtrip import PROTOCOLS, Target, send_logs, send_spans, span_specs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=500, help="spans per SDK provider (one resource, one protocol)")
    ap.add_argument("--logs", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    logging.getLogger("opentelemetry").setLevel(logging.ERROR)  # the SDK warns of each mixed array it drops

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        collector = Collector(collector_config(Path(tmp), parquet={"compaction": {"enabled": False}})).start()
        target = Target(collector)
        spans: dict = {}
        logs: dict = {}
        try:
            t0 = time.perf_counter()
            batches = -(-args.spans // args.batch)
            for b in range(batches):
                n = min(args.batch, args.spans - b * args.batch)
                protocol = PROTOCOLS[b % len(PROTOCOLS)]
                spans |= send_spans(target.to, span_specs(rng, n), am.span_attributes(rng), protocol, rng,
                                    scope=am.span_attributes(rng))
                k = args.logs // batches + (b < args.logs % batches)
                logs |= send_logs(target.to, [am.any_attributes(rng) for _ in range(k)], am.span_attributes(rng),
                                  protocol, f"roundtrip-{b}")
            sent_s = time.perf_counter() - t0
            collector.wait_flushed(timeout_s=300)
            t1 = time.perf_counter()
            before = target.differences(spans, logs)
            t2 = time.perf_counter()
            merged = target.compact()
            t3 = time.perf_counter()
            after = target.differences(spans, logs)
            t4 = time.perf_counter()
        finally:
            collector.stop()
    for d in (before + [f"after compaction: {x}" for x in after])[:50]:
        print(d)
    print(f"spans sent: {len(spans)}, log records: {len(logs)}, seed {args.seed}")
    print(f"differences: {len(before)} before compaction, {len(after)} after (files merged: {merged})")
    print(f"sending: {sent_s:.1f} s, {len(spans) / sent_s:,.0f} spans/s through the SDK (3 protocols)")
    print(f"flushed to Parquet: {t1 - t0:.1f} s after the first send; checking: {t2 - t1:.1f} s before, "
          f"{t4 - t3:.1f} s after; compaction: {t3 - t2:.1f} s; total {t4 - t0:.1f} s")
    return 1 if before or after else 0


if __name__ == "__main__":
    sys.exit(main())
