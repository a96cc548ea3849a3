"""The bench's result files: one JSON per model run in the ``--out`` folder (the result dict
``runner.run_model`` builds), saved as each model finishes and read back to compare runs."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any


def file_label(model: str) -> str:
    """``model`` as a file-name part (and the progress bar's label): a GGUF path's file name,
    characters a file name should not hold as ``_``, at most 80 characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model).name if "/" in model else model).strip("_")[:80] or "model"


def save(result: dict[str, Any], model: str, folder: Path) -> Path:
    """``result`` as ``folder/<label>-<local time>.json``; its ``_file`` then names that file."""
    path = folder / f"{file_label(model)}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    result["_file"] = str(path)
    return path


class ResultFileError(Exception):
    """A result file that cannot be read as JSON; the message names the file first."""


def load(files: list[Path]) -> list[dict[str, Any]]:
    """Every result in ``files``, in order (a file holds one result or a list of them)."""
    results: list[dict[str, Any]] = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            raise ResultFileError(f"{f}: {exc}") from exc
        results.extend(data if isinstance(data, list) else [data])
    return results


def saved_files(folder: Path) -> list[Path]:
    """The result files in ``folder`` (every JSON there), by name."""
    return sorted(folder.glob("*.json"))
