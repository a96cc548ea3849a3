"""The GGUF file behind a served model: its header, read.

``read_gguf`` parses only the header (key/value metadata and tensor descriptors) of a
GGUF file through ``mmap``; tensor data is never touched. We walk the header ourselves
with ``struct`` and take the format's constants (value types, ggml tensor types and
their block sizes, file types) from the ``gguf`` package of llama.cpp, because
``gguf.GGUFReader`` materialises every tokenizer array as numpy objects: 5-10 s for the
embedded 98 MB model, against ~0.1 s here. Format:
https://github.com/ggml-org/ggml/blob/master/docs/gguf.md

Finding the file behind a served model: ``bench_runner.model_files``.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
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
# a split model's files: NAME-00001-of-00003.gguf …
SHARD_NAME = re.compile(r"^(?P<stem>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


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
    match = SHARD_NAME.match(path.name)
    if match and int(match["no"]) != 1:  # the general.* metadata lives in the first shard
        first = path.with_name(f"{match['stem']}-00001-of-{match['count']}.gguf")
        path = first if first.is_file() else path
    header = read_header(path)
    meta, tensors = header.metadata, list(header.tensors)
    size, shards, missing = path.stat().st_size, 1, []
    split = _int(meta.get("split.count"))
    match = SHARD_NAME.match(path.name)
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
