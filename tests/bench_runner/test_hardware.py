"""bench_runner.hardware: the real probe on this machine, a fake nvidia-smi, and the pure tables."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from otelbench.bench_runner.hardware import (
    cpu_peak,
    lookup_gpu,
    measure_memory_bandwidth,
    parse_cpuinfo,
    parse_nvidia_smi,
    probe_hardware,
    query_nvidia_smi,
)


def test_probe_returns_sane_values_here() -> None:
    hw = probe_hardware(nvidia_smi="otelbench-no-such-nvidia-smi")
    cpu = hw.cpu
    assert cpu.model and cpu.model != "unknown"
    assert 1 <= cpu.physical_cores <= cpu.logical_cores
    assert 1 <= cpu.usable_cores <= cpu.logical_cores
    assert hw.ram_bytes > 256 * 2**20
    assert hw.gpus == () and hw.notes == ()  # no nvidia-smi: no GPU, and nothing to complain about
    assert hw.cpu_bandwidth_gbs is not None and 0.3 < hw.cpu_bandwidth_gbs < 5000
    assert hw.cpu_bandwidth_source.startswith("measured: numpy copy")
    if cpu.freq_mhz:
        assert cpu.peak_fp32_flops and cpu.peak_fp32_flops > 1e9
        assert cpu.peak_int8_ops and cpu.peak_int8_ops >= cpu.peak_fp32_flops
        assert cpu.peak_source.startswith("estimate:")


def test_bandwidth_measurement_respects_a_small_budget() -> None:
    gbs, how = measure_memory_bandwidth(size_bytes=32 * 2**20, budget_s=0.05, threads=2)
    assert gbs is not None and gbs > 0.1
    assert "32 MiB" in how and "best of" in how


def _fake_nvidia_smi(folder: Path, body: str) -> Path:
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


def test_fake_nvidia_smi_on_path_is_parsed(fake_bin: Path) -> None:
    # The script answers only the exact query we document, like the real tool would.
    _fake_nvidia_smi(
        fake_bin,
        'case "$*" in *--query-gpu=index,name,memory.total,driver_version*--format=csv,noheader,nounits*)\n'
        "  echo '0, NVIDIA H200, 143771, 570.86.15'\n"
        "  echo '1, NVIDIA GeForce RTX 3090, 24576, 570.86.15' ;;\n"
        "*) echo 'bad query' >&2; exit 2 ;;\nesac",
    )
    assert shutil.which("nvidia-smi") == str(fake_bin / "nvidia-smi")
    hw = probe_hardware(measure_bandwidth=False)
    assert [g.name for g in hw.gpus] == ["NVIDIA H200", "NVIDIA GeForce RTX 3090"]
    h200, rtx = hw.gpus
    assert h200.memory_bytes == 143771 * 2**20 and h200.driver == "570.86.15"
    assert h200.spec is not None and h200.spec.bandwidth_gbs == 4800
    assert rtx.spec is not None and rtx.spec.bandwidth_gbs == 936
    assert hw.notes == ()
    assert (hw.cpu_bandwidth_gbs, hw.cpu_bandwidth_source) == (None, "not measured")


def test_failing_nvidia_smi_is_a_note_not_a_crash(fake_bin: Path) -> None:
    _fake_nvidia_smi(fake_bin, "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver' >&2; exit 9")
    gpus, note = query_nvidia_smi()
    assert gpus == ()
    assert note is not None and "exited 9" in note and "NVIDIA driver" in note


def test_unknown_gpu_is_listed_without_figures(fake_bin: Path) -> None:
    _fake_nvidia_smi(fake_bin, "echo '0, Quadro P400, 2048, [N/A]'")
    gpus, note = query_nvidia_smi()
    assert len(gpus) == 1 and gpus[0].spec is None and gpus[0].driver is None
    assert note == "no datasheet figures for Quadro P400"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0, NVIDIA H100 80GB HBM3, 81559, 550.54.15", [("NVIDIA H100 80GB HBM3", 81559 * 2**20, 3350)]),
        ("0, NVIDIA A100-SXM4-40GB, [N/A], 535.1", [("NVIDIA A100-SXM4-40GB", None, 1555)]),
        ("garbage line\n\n0, Tesla T4, 15360, 535.1", [("Tesla T4", 15360 * 2**20, 320)]),
        ("", []),
    ],
)
def test_parse_nvidia_smi(text: str, expected: list[tuple[str, int | None, float]]) -> None:
    got = [(g.name, g.memory_bytes, g.spec.bandwidth_gbs if g.spec else None) for g in parse_nvidia_smi(text)]
    assert got == expected


@pytest.mark.parametrize(
    ("name", "bandwidth"),
    [
        ("NVIDIA H200", 4800),
        ("NVIDIA H200 NVL", 4800),
        ("NVIDIA GH200 480GB", 4900),
        ("NVIDIA H100 80GB HBM3", 3350),
        ("NVIDIA H100 PCIe", 2000),
        ("NVIDIA H100 NVL", 3900),
        ("NVIDIA A100-SXM4-80GB", 2039),
        ("NVIDIA A100 80GB PCIe", 1935),
        ("NVIDIA A100-PCIE-40GB", 1555),
        ("NVIDIA A10", 600),
        ("NVIDIA A10G", 600),
        ("NVIDIA L40S", 864),
        ("NVIDIA L4", 300),
        ("NVIDIA GeForce RTX 3090", 936),
        ("NVIDIA GeForce RTX 3090 Ti", 1008),
        ("NVIDIA GeForce RTX 4090", 1008),
        ("Quadro P400", None),
    ],
)
def test_lookup_gpu(name: str, bandwidth: float | None) -> None:
    spec = lookup_gpu(name)
    assert (spec.bandwidth_gbs if spec else None) == bandwidth


@pytest.mark.parametrize(
    ("flags", "cores", "mhz", "simd", "fp32", "int8"),
    [
        ({"sse2", "avx", "avx2", "fma"}, 2, 2445.0, "avx2+fma", 2 * 2445e6 * 32, 2 * 2 * 2445e6 * 32),
        ({"avx2", "fma", "avx512f", "avx512_vnni"}, 8, 3000.0, "avx512", 8 * 3e9 * 64, 4 * 8 * 3e9 * 64),
        ({"avx"}, 4, 2000.0, "avx", 4 * 2e9 * 16, 4 * 2e9 * 16),
        ({"asimd", "asimddp"}, 4, 2000.0, "neon", 4 * 2e9 * 16, 4 * 4 * 2e9 * 16),
    ],
)
def test_cpu_peak_estimate(flags: set[str], cores: int, mhz: float, simd: str, fp32: float, int8: float) -> None:
    got_simd, got_fp32, got_int8, how = cpu_peak(flags, cores, mhz, "x86_64")
    assert (got_simd, got_fp32, got_int8) == (simd, pytest.approx(fp32), pytest.approx(int8))
    assert how.startswith("estimate:")


def test_cpu_peak_without_a_frequency_is_unknown() -> None:
    assert cpu_peak({"avx2", "fma"}, 4, None) == ("avx2+fma", None, None, "unknown: no clock frequency")


def test_parse_cpuinfo_reads_the_first_processor() -> None:
    text = (
        "processor\t: 0\nmodel name\t: AMD EPYC 7B13\ncpu MHz\t\t: 2450.000\nflags\t\t: fpu avx2 fma\n"
        "\nprocessor\t: 1\nmodel name\t: other\n"
    )
    info = parse_cpuinfo(text)
    assert info["model name"] == "AMD EPYC 7B13"
    assert info["flags"].split() == ["fpu", "avx2", "fma"]
