"""bench_runner.gguf and bench_runner.model_files: the real embedded GGUF, synthetic MoE/split
files, and fake model folders."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from otelbench.bench_runner.gguf import ArraySummary, GgufError, read_gguf, read_header, _parse  # noqa: E402
from otelbench.bench_runner.model_files import (  # noqa: E402
    SearchRoots, Status, default_roots, file_sha256, locate_gguf, match_score)
from otelbench.bench_runner.llama_server import EmbeddedModelMissing, LlamaServer, find_embedded_model  # noqa: E402

REAL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_DATA_OFFSET = 1_785_664  # where its tensor data begins: the header ends before (gguf.GGUFReader's data_offset)


@pytest.fixture(scope="module")
def real_gguf() -> Path:
    try:
        return find_embedded_model()
    except EmbeddedModelMissing as exc:
        pytest.skip(str(exc))


def _link(src: Path, dst: Path) -> Path:
    """Put the real file at dst without copying 98 MB when the filesystem allows it."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        dst.symlink_to(src)
    except OSError:
        shutil.copyfile(src, dst)
    return dst


def _hardlink_or_copy(src: Path, dst: Path) -> Path:
    """A second, distinct path (realpath differs) with the same content."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
    return dst


def _write(path: Path, arch: str, tensors: dict[str, np.ndarray], meta: dict[str, int], **writer_args: int) -> Path:
    writer = gguf.GGUFWriter(str(path), arch, **writer_args)
    for key, value in meta.items():
        writer.add_uint32(key, value)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# --- the real embedded model -----------------------------------------------------------


def test_reads_the_embedded_model_header(real_gguf: Path) -> None:
    info = read_gguf(real_gguf)

    assert info.architecture == "llama"
    # No general.parameter_count in this file: counted from the header's tensor shapes.
    assert info.parameter_count == 134_515_008
    assert info.parameter_count_source == "tensor shapes"
    assert info.active_parameter_count == info.parameter_count
    assert (info.quantization, info.quantization_source) == ("Q4_1", "general.file_type")
    assert info.dominant_tensor_type == "Q4_1"
    assert info.tensor_types == {"Q4_1": 106_168_320, "Q8_0": 28_311_552, "F32": 35_136}
    assert info.context_length == 8192
    assert (info.block_count, info.embedding_length, info.head_count, info.head_count_kv) == (30, 576, 9, 3)
    assert info.expert_count is None and not info.is_moe
    assert info.size_bytes == real_gguf.stat().st_size
    assert 95e6 < info.size_bytes < 100e6
    # Tied embeddings: no output.weight; token_embd (Q8_0, 576 × 49152) doubles as the head.
    assert (info.embedding_parameter_count, info.output_parameter_count) == (28_311_552, 0)
    assert info.weight_bytes == info.active_weight_bytes == 96_576_768
    assert info.kv_bytes_per_token == 30 * 3 * (64 + 64) * 2  # layers × kv heads × (K+V head dims) × f16
    assert info.name and "smollm2" in info.name.lower()


class _CountedBytes(bytes):
    """Bytes that count what the parser copies out of them (strings, by slicing) and how far
    it reaches (a slice past the end returns short, silently; ``struct`` raises there)."""

    copied: int = 0
    furthest: int = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        out = super().__getitem__(key)
        if isinstance(key, slice):
            self.copied += len(out)
            self.furthest = max(self.furthest, len(self) if key.stop is None else key.stop)
        return out


def test_the_header_read_never_touches_tensor_data_nor_decodes_the_vocabulary(real_gguf: Path, tmp_path: Path) -> None:
    """What keeps the read cheap, checked as what is read rather than how long it takes."""
    with real_gguf.open("rb") as f:
        header = f.read(EMBEDDED_DATA_OFFSET)
    header_only = tmp_path / "header-only.gguf"
    header_only.write_bytes(header)
    assert read_header(header_only) == read_header(real_gguf)  # the 96 MB of tensor data are never needed
    counted = _CountedBytes(header)
    parsed = _parse(counted)
    assert parsed.metadata["tokenizer.ggml.tokens"] == ArraySummary("STRING", 49_152)
    assert parsed.metadata["tokenizer.ggml.merges"] == ArraySummary("STRING", 48_900)
    # keys, string values and tensor names (~7 KB); decoding the ~98,000 tokenizer strings
    # would copy out most of the 1.7 MB header
    assert counted.copied < 64 * 1024, counted.copied
    assert counted.furthest <= len(header)


@pytest.mark.slow
def test_agrees_with_the_gguf_package_reader(real_gguf: Path) -> None:
    """Our struct walk against llama.cpp's own (slow, numpy-heavy) GGUFReader."""
    ours = read_header(real_gguf)
    theirs = gguf.GGUFReader(str(real_gguf))
    assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
    assert [t.n_elements for t in ours.tensors] == [int(t.n_elements) for t in theirs.tensors]
    assert [t.n_bytes for t in ours.tensors] == [int(t.n_bytes) for t in theirs.tensors]
    assert [t.type_name for t in ours.tensors] == [t.tensor_type.name for t in theirs.tensors]
    for key in ("general.architecture", "llama.context_length", "general.file_type", "llama.block_count"):
        assert ours.metadata[key] == theirs.fields[key].contents()
    assert ours.metadata["tokenizer.ggml.tokens"].count == len(theirs.fields["tokenizer.ggml.tokens"].data)
    assert theirs.data_offset == EMBEDDED_DATA_OFFSET


def test_a_truncated_or_foreign_file_is_an_error_not_a_crash(real_gguf: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(real_gguf.read_bytes()[:200_000])  # ends inside the tokenizer vocabulary
    with pytest.raises(GgufError, match="truncated|past the end"):
        read_gguf(truncated)
    foreign = tmp_path / "model.gguf"
    foreign.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(GgufError, match="not a GGUF"):
        read_gguf(foreign)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(GgufError):
        read_gguf(empty)


# --- synthetic files: MoE and split models ---------------------------------------------


def test_moe_counts_only_the_used_experts_as_active(tmp_path: Path) -> None:
    f32 = np.float32
    path = _write(
        tmp_path / "moe.gguf",
        "qwen2moe",
        {
            "token_embd.weight": np.zeros((100, 16), f32),
            "blk.0.attn_q.weight": np.zeros((16, 16), f32),
            "blk.0.ffn_up_exps.weight": np.zeros((8, 32, 16), f32),  # 8 experts
            "blk.0.ffn_down_exps.weight": np.zeros((8, 16, 32), f32),
            "blk.0.ffn_up_shexp.weight": np.zeros((32, 16), f32),  # shared expert: always active
            "output.weight": np.zeros((100, 16), f32),
        },
        {
            "qwen2moe.expert_count": 8, "qwen2moe.expert_used_count": 2, "qwen2moe.context_length": 32768,
            "qwen2moe.block_count": 1, "qwen2moe.embedding_length": 16, "qwen2moe.attention.head_count": 4,
            "qwen2moe.attention.head_count_kv": 2, "general.file_type": int(gguf.LlamaFileType.ALL_F32),
        },
    )  # fmt: skip
    info = read_gguf(path)
    assert (info.expert_count, info.expert_used_count, info.is_moe) == (8, 2, True)
    experts, shared = 2 * 8 * 32 * 16, 1600 + 256 + 512 + 1600
    assert info.parameter_count == experts + shared
    assert info.active_parameter_count == experts * 2 // 8 + shared
    assert info.active_weight_bytes == info.active_parameter_count * 4
    assert (info.quantization, info.context_length) == ("F32", 32768)
    assert info.output_parameter_count == 1600  # untied head
    assert info.kv_bytes_per_token == 1 * 2 * (4 + 4) * 2


def test_split_model_sums_all_shards(tmp_path: Path) -> None:
    tensors = {f"blk.0.t{k}.weight": np.zeros((4, 8), np.float32) for k in range(5)}
    _write(tmp_path / "big.gguf", "llama", tensors, {"llama.block_count": 1}, split_max_tensors=2)
    first = tmp_path / "big-00001-of-00003.gguf"
    info = read_gguf(first)
    assert (info.shards, info.parameter_count, info.missing_shards) == (3, 5 * 32, ())
    assert info.size_bytes == sum(p.stat().st_size for p in tmp_path.glob("big-*.gguf"))
    assert read_gguf(tmp_path / "big-00002-of-00003.gguf").path == first  # a later shard leads to the first
    found = locate_gguf("big", roots=SearchRoots(other=(tmp_path,)))
    assert found.status is Status.READY and not found.ambiguous  # one model, not three files
    assert found.info is not None and found.info.shards == 3
    (tmp_path / "big-00003-of-00003.gguf").unlink()
    partial = read_gguf(first)
    assert partial.missing_shards == ("big-00003-of-00003.gguf",)
    assert partial.parameter_count == 4 * 32


def test_big_endian_file(tmp_path: Path) -> None:
    path = tmp_path / "be.gguf"
    writer = gguf.GGUFWriter(str(path), "llama", endianess=gguf.GGUFEndian.BIG)
    writer.add_uint32("llama.context_length", 4096)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((8, 4), np.float32).byteswap().view(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    info = read_gguf(path)
    assert (info.architecture, info.context_length, info.parameter_count) == ("llama", 4096, 32)


# --- finding the file ------------------------------------------------------------------


@pytest.fixture
def fake_home(tmp_path: Path, real_gguf: Path) -> Path:
    """An LM Studio tree and an Ollama store, both pointing at the real file, plus decoys."""
    home = tmp_path / "home"
    lms = home / ".lmstudio" / "models"
    _link(real_gguf, lms / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF" / REAL_NAME)
    (lms / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF" / "mmproj-SmolLM2-f16.gguf").write_bytes(b"ignored")
    decoy = lms / "lmstudio-community" / "Qwen2.5-Coder-7B-Instruct-GGUF" / "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf"
    decoy.parent.mkdir(parents=True)
    decoy.write_bytes(b"GGUF-decoy-never-read")

    ollama = home / ".ollama" / "models"
    digest = "a" * 64
    _link(real_gguf, ollama / "blobs" / f"sha256-{digest}")
    manifest = {
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + "c" * 64},
        "layers": [
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "b" * 64, "size": 10},
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": 98362432},
        ],
    }
    for rel in ("registry.ollama.ai/library/smollm2/135m", "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF/Q4_1"):
        target = ollama / "manifests" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(manifest))
    return home


@pytest.mark.parametrize(
    ("model_id", "source"),
    [
        ("smollm2:135m", "ollama"),
        ("hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_1", "ollama"),
        ("HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "lmstudio"),  # the folder holds one model file
        (f"HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/{REAL_NAME}", "lmstudio"),
        ("smollm2-135m-instruct", "fuzzy"),  # LM Studio's short id
        ("smollm2-135m-instruct@q4_1", "fuzzy"),  # LM Studio's id when several quants exist
        ("SMOLLM2_135M_INSTRUCT", "fuzzy"),
        ("smollm2", "fuzzy"),  # Ollama's "latest" tag is not there; the 135m tag is
    ],
)
def test_locates_through_lmstudio_and_ollama_layouts(fake_home: Path, real_gguf: Path, model_id: str, source: str) -> None:
    found = locate_gguf(model_id, roots=default_roots(fake_home))
    assert found.status is Status.READY, found.reason
    assert found.info is not None
    assert found.info.source.startswith(source), found.info.source
    assert os.path.samefile(found.info.path, real_gguf)
    assert (found.info.architecture, found.info.quantization) == ("llama", "Q4_1")


@pytest.mark.parametrize(
    "model_id", ["gpt-4o", "qwen2.5-7b-instruct@q8_0", "smollm2-135m-instruct@q8_0", "smollm2-360m-instruct"]
)
def test_unknown_or_different_models_are_missing(fake_home: Path, model_id: str) -> None:
    found = locate_gguf(model_id, roots=default_roots(fake_home))
    assert found.status is Status.MISSING
    assert found.info is None
    assert f"no GGUF file found for {model_id!r}" in found.reason


def test_missing_in_an_empty_home(tmp_path: Path) -> None:
    found = locate_gguf("llama3.2:3b", roots=default_roots(tmp_path))
    assert (found.status, found.candidates) == (Status.MISSING, ())


def test_close_call_between_quantizations_reports_candidates(fake_home: Path, real_gguf: Path) -> None:
    folder = fake_home / ".lmstudio" / "models" / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF"
    _hardlink_or_copy(real_gguf, folder / "SmolLM2-135M-Instruct.Q8_0.gguf")  # a second quantization
    found = locate_gguf("smollm2-135m-instruct", roots=default_roots(fake_home))
    assert found.status is Status.READY and found.ambiguous
    second = folder / "SmolLM2-135M-Instruct.Q8_0.gguf"
    assert {os.path.realpath(c.path) for c in found.candidates} == {os.path.realpath(real_gguf), os.path.realpath(second)}
    assert "close call" in found.reason
    # Naming the quantization settles it.
    exact = locate_gguf("smollm2-135m-instruct@q8_0", roots=default_roots(fake_home))
    assert exact.status is Status.READY and not exact.ambiguous
    assert exact.info is not None and exact.info.path.name == "SmolLM2-135M-Instruct.Q8_0.gguf"


def test_models_dir_and_an_unreadable_best_match(tmp_path: Path, real_gguf: Path) -> None:
    models = tmp_path / "models"
    _link(real_gguf, models / "deep" / "er" / REAL_NAME)
    roots = default_roots(tmp_path / "nohome", models_dirs=(models,))
    found = locate_gguf("SmolLM2-135M-Instruct-Q4_1", roots=roots)
    assert found.status is Status.READY and found.info is not None
    assert found.info.source.startswith("fuzzy")

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "phi-4-mini-Q4_K_M.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")  # header cut short
    missing = locate_gguf("phi-4-mini@q4_k_m", roots=SearchRoots(other=(broken,)))
    assert missing.status is Status.MISSING
    assert "unreadable" in missing.reason and "phi-4-mini-Q4_K_M.gguf" in missing.reason


def test_id_that_is_a_path(real_gguf: Path, tmp_path: Path) -> None:
    found = locate_gguf(str(real_gguf), roots=SearchRoots())
    assert found.status is Status.READY and found.info is not None and found.info.source == "path"


@pytest.mark.parametrize(
    ("model_id", "label", "low", "high"),
    [
        ("smollm2-135m-instruct", f"HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/{REAL_NAME}", 0.95, 1.0),
        ("qwen2.5-7b-instruct", "lmstudio-community/Qwen2.5-7B-Instruct-GGUF/Qwen2.5-7B-Instruct-Q4_K_M.gguf", 0.95, 1.0),
        ("qwen2.5-7b-instruct", "x/Qwen2.5-Coder-7B-Instruct-GGUF/Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf", 0.6, 0.93),
        ("Qwen3-30B-A3B-GGUF:Q4_K_M", "unsloth/Qwen3-30B-A3B-GGUF/Qwen3-30B-A3B-Q4_K_M.gguf", 0.95, 1.0),
        ("llama3.2:3b", "llama3.2:1b", 0.0, 0.4),  # another size is another model
        ("smollm2-135m-instruct@q8_0", f"x/{REAL_NAME}", 0.0, 0.59),  # another quantization is another file
        ("gpt-4o", f"x/{REAL_NAME}", 0.0, 0.2),
    ],
)
def test_match_score(model_id: str, label: str, low: float, high: float) -> None:
    assert low <= match_score(model_id, label) <= high


def test_a_file_sha256_is_its_contents_and_read_again_only_when_the_file_changed(real_gguf: Path,
                                                                                  tmp_path: Path) -> None:
    import hashlib

    from otelbench.bench_runner import model_files

    assert file_sha256(real_gguf) == hashlib.sha256(real_gguf.read_bytes()).hexdigest()
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF one")
    first = file_sha256(path)
    reads = model_files._sha256.cache_info().misses
    assert file_sha256(path) == first and model_files._sha256.cache_info().misses == reads  # read once
    path.write_bytes(b"GGUF two, longer")  # another size (and modification time): read again
    assert file_sha256(path) == hashlib.sha256(b"GGUF two, longer").hexdigest() != first
    with pytest.raises(OSError):
        file_sha256(tmp_path / "gone.gguf")


# --- the real server -------------------------------------------------------------------


@pytest.mark.model
def test_llama_cpp_server_id_resolves(llama_server: LlamaServer, tmp_path: Path) -> None:
    from otelbench.bench_runner.servers import probe

    assert llama_server.model_id is not None
    # The id is a name, not a path: the server's /props say which file it loaded.
    info = probe(llama_server.base_url)
    assert info.kind == "llama_cpp" and info.paths_for(llama_server.model_id) == (str(llama_server.model_path),)
    props = httpx.get(llama_server.root_url + "/props").json()
    assert info.version == props["build_info"] and info.version  # the build, as the server states it
    found = locate_gguf(llama_server.model_id, server_paths=info.paths_for(llama_server.model_id),
                        roots=default_roots(tmp_path))
    assert found.status is Status.READY, found.reason
    assert found.info is not None and found.info.path.name == REAL_NAME
    assert (found.info.architecture, found.info.quantization, found.info.context_length) == ("llama", "Q4_1", 8192)

    # An alias the disk does not know still resolves through the paths the server reports.
    via_server = locate_gguf("my-alias", server_paths=info.model_paths, roots=default_roots(tmp_path))
    assert via_server.status is Status.READY and via_server.info is not None
    assert via_server.info.source == "server"
