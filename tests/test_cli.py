"""The ``otelbench`` console script's own options."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from otelbench import cli
from otelbench.storage.lake import Lake


@pytest.mark.parametrize("verbose", [False, True])
def test_library_log_noise_is_off_unless_verbose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], verbose: bool) -> None:
    """gRPC's C core logs at INFO on stderr ("skipping fork() handlers" whenever a process
    starts beside a gRPC thread): every command quiets it for itself and its children,
    unless asked for with --verbose; a user's own GRPC_VERBOSITY wins either way."""
    import signal

    Lake(tmp_path).init()
    previous = signal.getsignal(signal.SIGTERM)  # main() installs its own: give pytest's back
    monkeypatch.setenv("GRPC_VERBOSITY", "recorded")  # so that teardown removes what main() sets
    monkeypatch.delenv("GRPC_VERBOSITY")
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", os.environ.get("PYDANTIC_DISABLE_PLUGINS", "__all__"))
    monkeypatch.setenv("OTELBENCH_DEFAULTED", os.environ.get("OTELBENCH_DEFAULTED", ""))
    args = ["sql", "--lake", str(tmp_path), "--format", "csv", "SELECT 1 AS one"] + (["--verbose"] if verbose else [])
    assert cli.main(args) == 0
    assert capsys.readouterr().out == "one\n1\n"
    assert os.environ.get("GRPC_VERBOSITY") == (None if verbose else "ERROR")
    monkeypatch.setenv("GRPC_VERBOSITY", "DEBUG")
    assert cli.main(args) == 0 and os.environ["GRPC_VERBOSITY"] == "DEBUG"
    signal.signal(signal.SIGTERM, previous)


def test_every_command_takes_verbose() -> None:
    parser = cli.build_parser()
    for command in ("serve", "sql", "process", "demo", "bench", "model", "web", "mcp", "init", "suite"):
        assert "--verbose" in parser._subparsers._group_actions[0].choices[command].format_help()
