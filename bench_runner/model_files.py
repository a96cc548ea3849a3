"""The GGUF file behind a served model, found on disk.

``locate_gguf`` maps a model id, as an OpenAI-compatible server reports it, to a file:
the id itself when it is a path, paths the server reported (llama.cpp ``/props``
``model_path``, llama-cpp-python ids), Ollama manifests, LM Studio's
``publisher/model/file.gguf`` folders, extra ``--models-dir`` folders, then a fuzzy
match of the id against the file names, and reads its header (``bench_runner.gguf``).
``file_sha256`` names the file a result ran on. Nothing here talks to a server.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from enum import StrEnum
from pathlib import Path

from otelbench.bench_runner.gguf import SHARD_NAME, GgufError, GgufInfo, read_gguf


_HASH_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """The file's sha256, read in chunks (a GGUF file may be tens of GB), computed once
    per process for a path of the same size and modification time: a bench of several
    models, or a suite run's manifest, does not read a file twice."""
    st = path.stat()
    return _sha256(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:  # size and mtime key the cache
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Status(StrEnum):
    READY = "READY"
    MISSING = "MISSING"


@dataclass(frozen=True)
class Candidate:
    path: Path
    label: str  # what the id was compared with: "publisher/model/file.gguf", "llama3.2:3b"
    score: float
    source: str


@dataclass(frozen=True)
class SearchRoots:
    lmstudio: tuple[Path, ...] = ()
    ollama: tuple[Path, ...] = ()
    other: tuple[Path, ...] = ()  # llama.cpp's -hf cache, the Hugging Face hub, --models-dir


def default_roots(home: Path | None = None, models_dirs: tuple[Path, ...] = ()) -> SearchRoots:
    """Where LM Studio, Ollama, llama.cpp and Hugging Face keep models under ``home``.

    System-wide folders (Ollama's Linux service) are added only for the real home.
    """
    system = home is None
    home = Path.home() if home is None else home
    ollama = [home / ".ollama" / "models"] + ([Path("/usr/share/ollama/.ollama/models")] if system else [])
    return SearchRoots(
        lmstudio=(home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"),
        ollama=tuple(ollama),
        other=(*models_dirs, home / ".cache" / "llama.cpp", home / ".cache" / "huggingface" / "hub"),
    )


@dataclass(frozen=True)
class GgufLookup:
    model_id: str
    status: Status
    info: GgufInfo | None
    reason: str
    candidates: tuple[Candidate, ...] = ()  # READY: the pick and close runners-up; MISSING: the nearest

    @property
    def ambiguous(self) -> bool:
        """A fuzzy pick with runners-up within FUZZY_CLOSE_CALL: check the pick."""
        return self.status is Status.READY and len(self.candidates) > 1


FUZZY_MIN_SCORE = 0.6
FUZZY_CLOSE_CALL = 0.05  # a runner-up this close is reported next to the pick
_MAX_FILES_PER_ROOT = 20_000


def locate_gguf(
    model_id: str, *, server_paths: Sequence[str] = (), roots: SearchRoots | None = None
) -> GgufLookup:
    """Find and read the GGUF file serving ``model_id``; never raises for a missing file.

    Exact sources first (the id as a path, the server's paths, an Ollama manifest, an
    LM Studio folder), then the best fuzzy match over every GGUF file under ``roots``.
    """
    roots = default_roots() if roots is None else roots
    exact: list[tuple[Path, str]] = [(Path(model_id).expanduser(), "path")]
    exact += [(Path(p).expanduser(), "server") for p in server_paths if p]
    exact += [(p, "ollama") for p in _ollama_exact(model_id, roots.ollama)]
    exact += [(p, "lmstudio") for p in _lmstudio_exact(model_id, roots.lmstudio)]
    problems = []
    for path, source in exact:
        if path.is_file():
            try:
                return GgufLookup(model_id, Status.READY, read_gguf(path, source), f"{source}: {path}")
            except GgufError as exc:
                problems.append(str(exc))
    scored = sorted(_fuzzy_candidates(model_id, roots), key=lambda c: -c.score)
    for i, best in enumerate(scored):
        if best.score < FUZZY_MIN_SCORE:
            break
        close = tuple(c for c in scored[i:] if best.score - c.score <= FUZZY_CLOSE_CALL)[:5]
        how = f"fuzzy: {best.label!r} scored {best.score:.2f}"
        if len(close) > 1:
            how += f" (close call: {', '.join(f'{c.label!r} {c.score:.2f}' for c in close[1:])})"
        try:
            return GgufLookup(model_id, Status.READY, read_gguf(best.path, how), how, close)
        except GgufError as exc:
            problems.append(str(exc))
    near = tuple(scored[:3])
    reason = f"no GGUF file found for {model_id!r}"
    if near:
        reason += "; nearest: " + ", ".join(f"{c.label!r} ({c.score:.2f})" for c in near)
    if problems:
        reason += "; unreadable: " + "; ".join(problems)
    return GgufLookup(model_id, Status.MISSING, None, reason, near)


def _ollama_name(model_id: str) -> tuple[str, str, str, str]:
    """"llama3.2" → (registry.ollama.ai, library, llama3.2, latest); "hf.co/u/m:Q4_K_M" keeps all."""
    name, _, tag = model_id.rpartition(":") if ":" in model_id.rsplit("/", 1)[-1] else (model_id, "", "latest")
    parts = name.split("/")
    if len(parts) == 1:
        parts = ["registry.ollama.ai", "library", *parts]
    elif len(parts) == 2:
        parts = ["registry.ollama.ai", *parts]
    host, namespace, model = parts[0], "/".join(parts[1:-1]), parts[-1]
    return host, namespace, model, tag or "latest"


def _ollama_blob(manifest: Path, models_root: Path) -> Path | None:
    """The model layer's blob: the manifest is an OCI manifest whose layers name digests."""
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers") or []
    except (OSError, ValueError, AttributeError):
        return None
    for layer in layers:
        if isinstance(layer, dict) and layer.get("mediaType") == "application/vnd.ollama.image.model":
            digest = str(layer.get("digest", ""))
            for name in (digest.replace(":", "-"), digest):  # older Ollama kept the colon
                blob = models_root / "blobs" / name
                if blob.is_file():
                    return blob
    return None


def _ollama_exact(model_id: str, roots: tuple[Path, ...]) -> list[Path]:
    host, namespace, model, tag = _ollama_name(model_id)
    found = []
    for root in roots:
        manifest = root / "manifests" / host / namespace / model / tag
        blob = _ollama_blob(manifest, root) if manifest.is_file() else None
        if blob:
            found.append(blob)
    return found


def _lmstudio_exact(model_id: str, roots: tuple[Path, ...]) -> list[Path]:
    """LM Studio ids are often "publisher/model" or "publisher/model/file.gguf"."""
    rel = model_id.split("@", 1)[0].strip("/")
    if not rel or ".." in Path(rel).parts:
        return []
    found = []
    for root in roots:
        target = root / rel
        if target.is_file():
            found.append(target)
        elif target.is_dir():
            files = [f for f in sorted(target.glob("*.gguf")) if _is_model_file(f.name)]
            if len(files) == 1:  # several quantizations in the folder: let the fuzzy match pick
                found.append(files[0])
    return found


def _is_model_file(name: str) -> bool:
    """A GGUF model, counted once: not a vision projector, not a later shard of a split model."""
    lower = name.lower()
    shard = SHARD_NAME.match(name)
    return lower.endswith(".gguf") and not lower.startswith("mmproj") and (shard is None or int(shard["no"]) == 1)


def _gguf_files(root: Path, max_depth: int = 5) -> list[Path]:
    files: list[Path] = []
    base_depth = len(root.parts)
    for folder, dirs, names in os.walk(root, followlinks=False):
        if len(Path(folder).parts) - base_depth >= max_depth:
            dirs.clear()
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files += [Path(folder) / n for n in names if _is_model_file(n)]
        if len(files) >= _MAX_FILES_PER_ROOT:
            break
    return files


def _fuzzy_candidates(model_id: str, roots: SearchRoots) -> list[Candidate]:
    labelled: list[tuple[Path, str, str]] = []
    for root in roots.ollama:
        manifests = root / "manifests"
        for manifest in (p for p in manifests.rglob("*") if p.is_file()) if manifests.is_dir() else ():
            host, *namespace, model, tag = manifest.relative_to(manifests).parts
            prefix = "" if (host, namespace) == ("registry.ollama.ai", ["library"]) else "/".join([host, *namespace]) + "/"
            blob = _ollama_blob(manifest, root)
            if blob:
                labelled.append((blob, f"{prefix}{model}:{tag}", "ollama"))
    for kind, kind_roots in (("lmstudio", roots.lmstudio), ("dir", roots.other)):
        for root in kind_roots:
            for f in _gguf_files(root) if root.is_dir() else ():
                # Hugging Face hub folders read "models--org--repo/snapshots/<sha>/file.gguf"
                label = re.sub(r"models--([^/]+)--([^/]+)/snapshots/[0-9a-f]+", r"\1/\2", f.relative_to(root).as_posix())
                labelled.append((f, label, kind))
    best: dict[str, Candidate] = {}
    for path, label, kind in labelled:
        score = match_score(model_id, label)
        key = os.path.realpath(path)  # the same blob seen through several names counts once
        if key not in best or score > best[key].score:
            best[key] = Candidate(path, label, score, kind)
    return list(best.values())


_QUANT = re.compile(r"(?<![a-z0-9])(i?q\d(?:_(?:k|\d|[a-z]{1,3}))*|tq\d_\d|bf16|fp16|f16|fp32|f32|mxfp4)(?![a-z0-9])")
_SIZE = re.compile(r"^\d+(?:\.\d+)?[bm]$")


def _normalize(text: str) -> tuple[str | None, list[str]]:
    """(quantization, other tokens) of a model id or file path, case and separators ignored."""
    text = text.lower()
    text = re.sub(r"-\d{5}-of-\d{5}", "", text).removesuffix(".gguf")
    text = re.sub(r"\.gguf(?=/|$)", "", text)
    quants = _QUANT.findall(text.replace("-", "_").replace("fp16", "f16"))
    text = _QUANT.sub(" ", text.replace("-", "_"))
    tokens = [t.strip(".") for t in re.split(r"[^a-z0-9.]+", text)]
    return (quants[-1] if quants else None), [t for t in tokens if t and t not in {"gguf", "latest"}]


def match_score(model_id: str, label: str) -> float:
    """How well a file's label fits a model id, 0..1; quantization and size must agree.

    Token recall (how much of the id the label covers) dominates; precision and the
    character similarity of the file name break ties; a different quantization or
    parameter size ("7b" vs "8b") is a different file and is pushed below the cut.
    """
    id_quant, id_tokens = _normalize(model_id)
    label_quant, label_tokens = _normalize(label)
    if not id_tokens or not label_tokens:
        return 0.0
    # Recall may use the folders (ids often name the publisher); precision and similarity
    # use the file name alone, so "qwen2.5-7b-instruct" prefers that file over "...-coder-...".
    file_tokens = _normalize(label.rsplit("/", 1)[-1])[1] or label_tokens
    recall = len(set(id_tokens) & set(label_tokens)) / len(set(id_tokens))
    precision = len(set(id_tokens) & set(file_tokens)) / len(set(file_tokens))
    similarity = SequenceMatcher(None, "".join(id_tokens), "".join(file_tokens)).ratio()
    score = 0.5 * recall + 0.2 * precision + 0.3 * similarity
    if id_quant and label_quant:
        score += 0.1 if id_quant == label_quant else -0.5
    elif id_quant:  # the id names a quantization the label cannot confirm (Ollama tags often omit it)
        score -= 0.2
    id_sizes = {t for t in id_tokens if _SIZE.match(t)}
    label_sizes = {t for t in label_tokens if _SIZE.match(t)}
    if id_sizes and label_sizes and not id_sizes & label_sizes:
        score -= 0.4
    return round(max(0.0, min(1.0, score)), 4)

