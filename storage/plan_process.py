"""The process that plans a compaction's merges (``python -m otelbench.storage.plan_process``,
through ``storage.process.call``): DuckDB and pyarrow, no numpy.

It answers a merge's plan (``storage.plan.make_in_child``: a bucket's merge, planned on
the inputs it downloaded) or the first half of a compactor's run on a local lake
(``collector.compactor.run``): every signal table's journals settled, merges chosen and
planned (``storage.compaction.plan_run``), for ``compaction.compact_planned``.
"""

from __future__ import annotations

import logging
from typing import Any

if __name__ == "__main__":  # before pyarrow loads
    from otelbench.storage.process import without_numpy

    without_numpy()

from otelbench.storage import compaction, plan, process  # noqa: E402
from otelbench.storage.location import open_fs  # noqa: E402
from otelbench.storage.schema import SIGNAL, TABLES, tables  # noqa: E402


def answer(request: tuple[Any, ...]) -> Any:
    """``("merge", location, table, *make's other arguments)`` → ``storage.plan.Plan``;
    ``("run", *plan_signal_tables' arguments)`` → ``plan_signal_tables``'s answer."""
    job, *args = request
    if job == "merge":  # the lake by its location (an object store's client does not pickle)
        location, name, *rest = args
        return plan.make(open_fs(location), TABLES[name], *rest)
    return plan_signal_tables(*args)


def plan_signal_tables(lake_path: str, owner: str | None, below_batch_id: str, min_files: int,
                       memory_mib: int) -> dict[str, list[Any]]:
    """Of every signal table: journals settled, merges chosen and planned
    (``storage.compaction.plan_run``), for ``compaction.compact_planned``."""
    fs = open_fs(lake_path)
    return {t.name: compaction.plan_run(fs, t, below_batch_id=below_batch_id, owner=owner, min_files=min_files,
                                        memory_mib=memory_mib) for t in tables(SIGNAL)}


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    process.answer(answer)
