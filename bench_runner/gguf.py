"""The GGUF file behind a served model: find it on disk, read its header.

``read_gguf`` parses only the header (key/value metadata and tensor descriptors) of a
GGUF file through ``mmap``; tensor data is never touched. We walk the header ourselves
with ``struct`` and take the format's constants (value types, ggml tensor types and
their block sizes, file types) from the ``gguf`` package of llama.cpp, because
``gguf.GGUFReader`` materialises every tokenizer array as numpy objects: 5-10 s for the
embedded 98 MB model, against ~0.1 s here. Format:
https://github.com/ggml-org/ggml/blob/master/docs/gguf.md

``locate_gguf`` maps a model id, as an OpenAI-compatible server reports it, to a file:
the id itself when it is a path, paths the server reported (llama.cpp ``/props``
``model_path``, llama-cpp-python ids), Ollama manifests, LM Studio's
``publisher/model/file.gguf`` folders, extra ``--models-dir`` folders, then a fuzzy
match of the id against the file names. Nothing here talks to a server.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import StrEnum
from pathlib import Path
from typing import Any

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType, LlamaFileType

GGUF_MAGIC = b"GGUF"
KV_CACHE_BYTES_PER_ELEMENT = 2  # f16: the default KV cache type of llama.cpp, LM Studio and Ollama
_MAX_COUNT = 10_000_000  # more tensors or keys than this is a corrupt header, not a model
_KEEP_ARRAY_ITEMS = 1024  # per-layer arrays are kept; tokenizer vocabularies are only counted
_SCALAR_FORMATS: dict[int, str] = {
    GGUFValueType.UINT8: "B", GGUFValueType.INT8: "b", GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h", GGUFValueType.UINT32: "I", GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f", GGUFValueType.BOOL: "?", GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q", GGUFValueType.FLOAT64: "d",
}  # fmt: skip
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


class GgufError(ValueError):
    """Not a GGUF file, or a truncated or corrupt header."""


@dataclass(frozen=True)
class ArraySummary:
    """A long metadata array (a tokenizer vocabulary) that was skipped, not read."""

    item_type: str
    count: int


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dims: tuple[int, ...]  # ggml order: dims[0] is the row length, experts are the last dim
    type_name: str
    n_elements: int
    n_bytes: int | None  # None for a tensor type this gguf package does not know


@dataclass(frozen=True)
class GgufHeader:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorEntry, ...]


class _Cursor:
    """Reads little- or big-endian GGUF values from a buffer, checking every bound."""

    def __init__(self, buf: mmap.mmap | bytes, endian: str) -> None:
        self.buf, self.endian, self.pos = buf, endian, 0

    def scalar(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise GgufError(f"header truncated at byte {self.pos}")
        (value,) = struct.unpack_from(self.endian + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.scalar("Q")
        if self.pos + n > len(self.buf):
            raise GgufError(f"string of {n} bytes runs past the end of the file at byte {self.pos}")
        text = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", "replace")
        self.pos += n
        return text

    def value(self, vtype: int) -> Any:
        if vtype == GGUFValueType.STRING:
            return self.string()
        if vtype in _SCALAR_FORMATS:
            return self.scalar(_SCALAR_FORMATS[vtype])
        if vtype != GGUFValueType.ARRAY:
            raise GgufError(f"unknown value type {vtype} at byte {self.pos}")
        item_type, count = self.scalar("I"), self.scalar("Q")
        if count > _MAX_COUNT * 10:
            raise GgufError(f"array of {count} items at byte {self.pos}")
        if count <= _KEEP_ARRAY_ITEMS:
            return [self.value(item_type) for _ in range(count)]
        if item_type in _SCALAR_FORMATS:  # fixed width: jump over it
            self.pos += count * struct.calcsize(_SCALAR_FORMATS[item_type])
        elif item_type == GGUFValueType.STRING:  # variable width: hop from length to length
            for _ in range(count):
                n = self.scalar("Q")  # not "self.pos += ...": that reads pos before the hop
                self.pos += n
        else:
            for _ in range(count):
                self.value(item_type)
        if self.pos > len(self.buf):
            raise GgufError("array runs past the end of the file")
        return ArraySummary(_type_name(GGUFValueType, item_type), count)


def _type_name(enum: type[GGUFValueType] | type[GGMLQuantizationType], value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return f"type{value}"


def read_header(path: Path | str) -> GgufHeader:
    """Metadata and tensor descriptors of one GGUF file (one shard of a split model)."""
    path = Path(path)
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(buf)
    except (OSError, ValueError) as exc:  # mmap of an empty file raises ValueError
        if isinstance(exc, GgufError):
            raise GgufError(f"{path}: {exc}") from None
        raise GgufError(f"{path}: cannot read: {exc}") from exc


def _parse(buf: mmap.mmap | bytes) -> GgufHeader:
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise GgufError("not a GGUF file (bad magic)")
    (version,) = struct.unpack_from("<I", buf, 4)
    endian = "<"
    if version & 0xFFFF == 0:  # a big-endian file reads as 0x03000000 on our side
        endian, (version,) = ">", struct.unpack_from(">I", buf, 4)
    if version < 2:
        raise GgufError(f"GGUF version {version} (2023, 32-bit counts) is not supported")
    cur = _Cursor(buf, endian)
    cur.pos = 8
    n_tensors, n_kv = cur.scalar("Q"), cur.scalar("Q")
    if n_tensors > _MAX_COUNT or n_kv > _MAX_COUNT:
        raise GgufError(f"implausible counts: {n_tensors} tensors, {n_kv} keys")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.scalar("I"))
    tensors = []
    for _ in range(n_tensors):
        name, n_dims = cur.string(), cur.scalar("I")
        if n_dims > 8:
            raise GgufError(f"tensor {name!r} has {n_dims} dims")
        dims = tuple(cur.scalar("Q") for _ in range(n_dims))
        ttype = cur.scalar("I")
        cur.scalar("Q")  # data offset: we never read tensor data
        n_elements = 1
        for d in dims:
            n_elements *= d
        type_name = _type_name(GGMLQuantizationType, ttype)
        tensors.append(TensorEntry(name, dims, type_name, n_elements, _n_bytes(ttype, n_elements)))
    return GgufHeader(version, metadata, tuple(tensors))


def _n_bytes(ttype: int, n_elements: int) -> int | None:
    try:
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ttype)]
    except (ValueError, KeyError):
        return None
    return n_elements // block * type_size


@dataclass(frozen=True)
class GgufInfo:
    """What the benchmark needs to know about a model file, each number from its header."""

    path: Path
    size_bytes: int  # on disk, all shards
    source: str  # how the file was found: "path", "server", "ollama", "lmstudio", "fuzzy: ..."
    architecture: str | None
    name: str | None  # general.name
    parameter_count: int | None
    parameter_count_source: str  # "general.parameter_count" or "tensor shapes"
    active_parameter_count: int | None  # MoE: shared + used experts' share; else = parameter_count
    quantization: str | None  # "Q4_1", "Q4_K_M", "F16", ...
    quantization_source: str  # "general.file_type" or "dominant tensor type"
    dominant_tensor_type: str | None  # by bytes, among weight matrices
    weight_bytes: int | None  # sum of tensor sizes
    active_weight_bytes: int | None  # MoE: only the used experts' share of expert tensors
    embedding_parameter_count: int  # token_embd: a lookup on input; also the output head when tied
    embedding_bytes: int
    output_parameter_count: int  # a separate output.weight head; 0 when tied to token_embd
    output_bytes: int
    context_length: int | None
    expert_count: int | None
    expert_used_count: int | None
    block_count: int | None
    embedding_length: int | None
    head_count: int | None
    head_count_kv: int | None  # the largest, when the header gives one per layer
    kv_bytes_per_token: int | None  # K+V cache, f16, all layers: grows with every context token
    tensor_types: dict[str, int] = field(default_factory=dict)  # elements per ggml type
    shards: int = 1
    missing_shards: tuple[str, ...] = ()

    @property
    def is_moe(self) -> bool:
        return bool(self.expert_count and self.expert_count > 1)


def read_gguf(path: Path | str, source: str = "path") -> GgufInfo:
    """Read a GGUF file's header (and its sibling shards' headers for a split model)."""
    path = Path(path)
    match = _SHARD.match(path.name)
    if match and int(match["no"]) != 1:  # the general.* metadata lives in the first shard
        first = path.with_name(f"{match['stem']}-00001-of-{match['count']}.gguf")
        path = first if first.is_file() else path
    header = read_header(path)
    meta, tensors = header.metadata, list(header.tensors)
    size, shards, missing = path.stat().st_size, 1, []
    split = _int(meta.get("split.count"))
    match = _SHARD.match(path.name)
    if split and split > 1 and match:  # each shard's header lists only its own tensors
        shards = split
        for no in range(1, split + 1):
            sibling = path.with_name(f"{match['stem']}-{no:05d}-of-{match['count']}.gguf")
            if sibling.name == path.name:
                continue
            if sibling.is_file():
                tensors.extend(read_header(sibling).tensors)
                size += sibling.stat().st_size
            else:
                missing.append(sibling.name)
    return _summarize(path, size, source, meta, tensors, shards, tuple(missing))


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _layer_int(value: Any) -> int | None:
    """A scalar key, or the largest entry of a per-layer array (hybrid models give arrays)."""
    if isinstance(value, list):
        values = [v for v in (_int(x) for x in value) if v is not None]
        return max(values) if values else None
    return _int(value)


def _summarize(
    path: Path, size: int, source: str, meta: dict[str, Any], tensors: list[TensorEntry],
    shards: int, missing: tuple[str, ...],
) -> GgufInfo:  # fmt: skip
    arch = meta.get("general.architecture") if isinstance(meta.get("general.architecture"), str) else None

    def key(suffix: str) -> Any:
        return meta.get(f"{arch}.{suffix}") if arch else None

    expert_count, expert_used = _int(key("expert_count")), _int(key("expert_used_count"))
    total = active = 0
    weight_bytes: int | None = 0
    active_bytes = 0.0
    by_type_elems: Counter[str] = Counter()
    by_type_bytes: Counter[str] = Counter()
    embd = embd_bytes = out = out_bytes = 0
    for t in tensors:
        total += t.n_elements
        by_type_elems[t.type_name] += t.n_elements
        if len(t.dims) >= 2:
            by_type_bytes[t.type_name] += t.n_bytes or 0
        # Expert tensors ("ffn_up_exps", ...) carry all experts in their last ggml dim; a
        # token only multiplies the experts the router picks (shared experts, "_shexp", always).
        share = 1.0
        if "_exps" in t.name and expert_used and len(t.dims) >= 2 and t.dims[-1] > 1:
            share = min(1.0, expert_used / t.dims[-1])
        active += round(t.n_elements * share)
        if t.n_bytes is None or weight_bytes is None:
            weight_bytes = None
        else:
            weight_bytes += t.n_bytes
            active_bytes += t.n_bytes * share
        if t.name == "token_embd.weight":
            embd, embd_bytes = t.n_elements, t.n_bytes or 0
        elif t.name == "output.weight":
            out, out_bytes = t.n_elements, t.n_bytes or 0

    header_count = _int(meta.get("general.parameter_count"))
    parameter_count = header_count if header_count else (total or None)
    dominant = by_type_bytes.most_common(1)[0][0] if by_type_bytes else None
    quantization, quant_source = _file_type_name(meta.get("general.file_type")), "general.file_type"
    if quantization is None:
        quantization, quant_source = dominant, "dominant tensor type"

    head_count, kv_heads = _layer_int(key("attention.head_count")), key("attention.head_count_kv")
    embedding_length, block_count = _int(key("embedding_length")), _int(key("block_count"))
    return GgufInfo(
        path=path,
        size_bytes=size,
        source=source,
        architecture=arch,
        name=meta.get("general.name") if isinstance(meta.get("general.name"), str) else None,
        parameter_count=parameter_count,
        parameter_count_source="general.parameter_count" if header_count else "tensor shapes",
        active_parameter_count=active if tensors else parameter_count,
        quantization=quantization,
        quantization_source=quant_source,
        dominant_tensor_type=dominant,
        weight_bytes=weight_bytes if tensors else None,
        active_weight_bytes=round(active_bytes) if tensors and weight_bytes is not None else None,
        embedding_parameter_count=embd,
        embedding_bytes=embd_bytes,
        output_parameter_count=out,
        output_bytes=out_bytes,
        context_length=_int(key("context_length")),
        expert_count=expert_count,
        expert_used_count=expert_used,
        block_count=block_count,
        embedding_length=embedding_length,
        head_count=head_count,
        head_count_kv=_layer_int(kv_heads) if kv_heads is not None else head_count,
        kv_bytes_per_token=_kv_bytes_per_token(meta, arch, block_count, embedding_length, head_count, kv_heads),
        tensor_types=dict(by_type_elems),
        shards=shards,
        missing_shards=missing,
    )


def _file_type_name(value: Any) -> str | None:
    """general.file_type → "Q4_K_M"; None when absent, unknown or "guessed"."""
    code = _int(value)
    if code is None or code == LlamaFileType.GUESSED:
        return None
    try:
        name = LlamaFileType(code).name
    except ValueError:
        return None
    return {"ALL_F32": "F32"}.get(name, name.removeprefix("MOSTLY_"))


def _kv_bytes_per_token(
    meta: dict[str, Any], arch: str | None, layers: int | None, n_embd: int | None,
    heads: int | None, kv_heads: Any,
) -> int | None:  # fmt: skip
    """Bytes of K and V cache one context token occupies (and each decode step re-reads)."""
    if not arch or not layers:
        return None
    lora_rank = _int(meta.get(f"{arch}.attention.kv_lora_rank"))
    if lora_rank:  # MLA (DeepSeek-2/3): one compressed latent plus the rope part per layer
        rope = _int(meta.get(f"{arch}.rope.dimension_count")) or 0
        return layers * (lora_rank + rope) * KV_CACHE_BYTES_PER_ELEMENT
    key_len = _int(meta.get(f"{arch}.attention.key_length"))
    value_len = _int(meta.get(f"{arch}.attention.value_length"))
    if key_len is None and n_embd and heads:
        key_len = n_embd // heads
    value_len = value_len or key_len
    if not key_len or not value_len:
        return None
    if isinstance(kv_heads, list):  # per layer; 0 for a recurrent layer with no KV cache
        per_layer = [_int(h) or 0 for h in kv_heads]
    else:
        per_layer = [_int(kv_heads) or heads or 0] * layers
    return sum(per_layer) * (key_len + value_len) * KV_CACHE_BYTES_PER_ELEMENT


# --- finding the file ------------------------------------------------------------------


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
    shard = _SHARD.match(name)
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

