"""The machine a local model runs on: CPU, RAM, GPUs, memory bandwidth, peak compute.

Every number carries how it was obtained ("measured", "datasheet", "estimate", ...),
because the plausibility checks treat a datasheet peak as a hard physical limit and a
quick measurement or a flags-based estimate only as a guide. ``probe_hardware`` is the
one I/O entry point; the parsers and tables below it are pure and tested as tables.
"""

from __future__ import annotations

import csv
import os
import platform
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil

BANDWIDTH_ARRAY_BYTES = 256 * 2**20  # well past any L3 this is likely to meet (EPYC: 32-256 MiB)
BANDWIDTH_BUDGET_S = 1.0
NVIDIA_SMI_TIMEOUT_S = 5.0
NVIDIA_SMI_QUERY = ("--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits")


@dataclass(frozen=True)
class GpuSpec:
    bandwidth_gbs: float  # peak memory bandwidth, GB/s (10^9)
    fp16_tflops: float | None  # dense tensor-core FP16, no sparsity
    int8_tops: float | None  # dense tensor-core INT8, no sparsity
    source: str


# Datasheet peaks, dense (the "with sparsity" figures are twice these). First match wins,
# so specific names ("RTX 3090 Ti", "H100 NVL") come before the general ones.
_AMPERE = "NVIDIA Ampere GA102 GPU Architecture whitepaper"
_ADA = "NVIDIA Ada GPU Architecture whitepaper"
KNOWN_GPUS: tuple[tuple[re.Pattern[str], GpuSpec], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), spec)
    for pattern, spec in [
        (r"\bGH200\b", GpuSpec(4900, 989, 1979, "NVIDIA GH200 datasheet (HBM3e)")),
        (r"\bH200\b", GpuSpec(4800, 989, 1979, "NVIDIA H200 datasheet (SXM)")),
        (r"\bH100\b.*\bNVL\b", GpuSpec(3900, 835, 1671, "NVIDIA H100 datasheet (NVL)")),
        (r"\bH100\b.*\bPCIe\b", GpuSpec(2000, 756, 1513, "NVIDIA H100 datasheet (PCIe)")),
        (r"\bH100\b", GpuSpec(3350, 989, 1979, "NVIDIA H100 datasheet (SXM)")),
        (r"\bA100\b.*80GB.*PCIe", GpuSpec(1935, 312, 624, "NVIDIA A100 datasheet (80GB PCIe)")),
        (r"\bA100\b.*80GB", GpuSpec(2039, 312, 624, "NVIDIA A100 datasheet (80GB SXM)")),
        (r"\bA100\b", GpuSpec(1555, 312, 624, "NVIDIA A100 datasheet (40GB)")),
        (r"\bL40S\b", GpuSpec(864, 362, 733, "NVIDIA L40S datasheet")),
        (r"\bL40\b", GpuSpec(864, 181, 362, "NVIDIA L40 datasheet")),
        (r"\bL4\b", GpuSpec(300, 121, 242, "NVIDIA L4 datasheet")),
        (r"\bA10G?\b", GpuSpec(600, 125, 250, "NVIDIA A10 datasheet")),
        (r"\bT4\b", GpuSpec(320, 65, 130, "NVIDIA T4 datasheet")),
        (r"\bV100\b", GpuSpec(900, 125, None, "NVIDIA V100 datasheet (SXM2)")),
        (r"RTX 5090", GpuSpec(1792, None, None, "NVIDIA GeForce RTX 5090 specifications")),
        (r"RTX 4090", GpuSpec(1008, 330, 661, _ADA)),
        (r"RTX 4080", GpuSpec(717, 195, 390, _ADA)),
        (r"RTX 3090 Ti", GpuSpec(1008, 160, 320, _AMPERE)),
        (r"RTX 3090", GpuSpec(936, 142, 284, _AMPERE)),
        (r"RTX 3080", GpuSpec(760, 119, 238, _AMPERE)),
        (r"RTX A6000", GpuSpec(768, 155, 310, "NVIDIA RTX A6000 datasheet")),
    ]
)


def lookup_gpu(name: str) -> GpuSpec | None:
    for pattern, spec in KNOWN_GPUS:
        if pattern.search(name):
            return spec
    return None


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    memory_bytes: int | None
    driver: str | None
    spec: GpuSpec | None  # None: not in KNOWN_GPUS, so no bandwidth or compute bound for it


@dataclass(frozen=True)
class Cpu:
    model: str
    physical_cores: int
    logical_cores: int
    usable_cores: int  # this process's affinity: what a server started from here may use
    freq_mhz: float | None
    freq_source: str
    simd: str  # the widest vector extension seen: "avx512", "avx2+fma", "neon", ...
    peak_fp32_flops: float | None
    peak_int8_ops: float | None
    peak_source: str


@dataclass(frozen=True)
class Hardware:
    cpu: Cpu
    ram_bytes: int
    gpus: tuple[Gpu, ...]
    cpu_bandwidth_gbs: float | None  # measured by a copy; None when skipped
    cpu_bandwidth_source: str
    notes: tuple[str, ...] = field(default_factory=tuple)


def probe_hardware(
    *,
    measure_bandwidth: bool = True,
    nvidia_smi: str = "nvidia-smi",
    bandwidth_budget_s: float = BANDWIDTH_BUDGET_S,
) -> Hardware:
    """Look at this machine; never raises for a missing tool or an unreadable file."""
    cpu = probe_cpu()
    gpus, gpu_note = query_nvidia_smi(nvidia_smi)
    notes = [gpu_note] if gpu_note else []
    bandwidth, how = (None, "not measured")
    if measure_bandwidth:
        bandwidth, how = measure_memory_bandwidth(budget_s=bandwidth_budget_s, threads=cpu.usable_cores)
    return Hardware(cpu, psutil.virtual_memory().total, gpus, bandwidth, how, tuple(notes))


# --- CPU ------------------------------------------------------------------------------


def parse_cpuinfo(text: str) -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (all processors repeat them)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


# FP32 FLOPs per cycle per core: vector lanes × 2 (an FMA is two) × FMA units. The unit
# count varies (Zen 4 and low-end Xeons have one 512-bit unit, Skylake-SP Gold has two);
# we take the larger, because this feeds an upper bound.
_FP32_PER_CYCLE = {"amx": 64, "avx512": 64, "avx2+fma": 32, "avx": 16, "sse": 8, "apple": 32, "neon": 16, "unknown": 8}


def cpu_peak(
    flags: set[str], cores: int, freq_mhz: float | None, machine: str = ""
) -> tuple[str, float | None, float | None, str]:
    """(simd level, peak FP32 FLOP/s, peak INT8 op/s, how): an estimate from the flags.

    INT8 matters because llama.cpp multiplies quantized weights with int8 dot products:
    VNNI/dotprod do four int8 multiply-adds where an FMA does one fp32; AVX2 without
    VNNI needs extra instructions, about twice fp32; AMX tiles are far wider.
    """
    if "amx_int8" in flags or "amx_bf16" in flags:
        simd = "amx"
    elif "avx512f" in flags:
        simd = "avx512"
    elif "avx2" in flags and "fma" in flags:
        simd = "avx2+fma"
    elif "avx" in flags:
        simd = "avx"
    elif "sse2" in flags:
        simd = "sse"
    elif machine == "arm64" and platform.system() == "Darwin":
        simd = "apple"
    elif "asimd" in flags or machine in ("aarch64", "arm64"):
        simd = "neon"
    else:
        simd = "unknown"
    if not freq_mhz:
        return simd, None, None, "unknown: no clock frequency"
    fp32 = cores * freq_mhz * 1e6 * _FP32_PER_CYCLE[simd]
    if "amx_int8" in flags:
        int8_factor = 32.0  # 1024 int8 MACs per cycle per core against 32 fp32 FMAs
    elif flags & {"avx512_vnni", "avx_vnni", "asimddp"} or simd == "apple":
        int8_factor = 4.0
    elif simd == "avx2+fma":
        int8_factor = 2.0
    else:
        int8_factor = 1.0
    how = (
        f"estimate: {cores} cores × {freq_mhz:.0f} MHz × {_FP32_PER_CYCLE[simd]} FP32 FLOPs/cycle ({simd}); "
        f"int8 ×{int8_factor:g}"
    )
    return simd, fp32, fp32 * int8_factor, how


def probe_cpu(cpuinfo_path: Path = Path("/proc/cpuinfo")) -> Cpu:
    try:
        info = parse_cpuinfo(cpuinfo_path.read_text(errors="replace"))
    except OSError:
        info = {}
    model = info.get("model name") or info.get("Model") or platform.processor() or platform.machine() or "unknown"
    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else logical
    freq_mhz, freq_source = _cpu_freq(info)
    flags = set((info.get("flags") or info.get("Features") or "").split())
    # Compute-bound prefill uses one thread per physical core it may run on.
    cores = max(1, min(physical, usable))
    simd, fp32, int8, how = cpu_peak(flags, cores, freq_mhz, platform.machine().lower())
    return Cpu(model, physical, logical, usable, freq_mhz, freq_source, simd, fp32, int8, how)


def _cpu_freq(info: dict[str, str]) -> tuple[float | None, str]:
    try:
        freq = psutil.cpu_freq()
    except (OSError, NotImplementedError, AttributeError):  # psutil raises on some VMs
        freq = None
    if freq is not None and freq.max:
        return float(freq.max), "psutil max frequency"
    if freq is not None and freq.current:
        return float(freq.current), "psutil current frequency (max unknown; boost may be higher)"
    try:
        return float(info["cpu MHz"]), "/proc/cpuinfo cpu MHz"
    except (KeyError, ValueError):
        return None, "unknown"


# --- memory bandwidth -------------------------------------------------------------------


def measure_memory_bandwidth(
    size_bytes: int = BANDWIDTH_ARRAY_BYTES,
    budget_s: float = BANDWIDTH_BUDGET_S,
    threads: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float | None, str]:
    """(GB/s, how): the best of repeated numpy copies, counting bytes read + written.

    That is STREAM's "copy" convention. A quick copy on a shared machine reads low (the
    2-core dev VM gave 5-16 GB/s from run to run), so callers treat it as a guide, not
    a physical limit. Copies alternate between one thread and ``threads`` threads, since
    one core alone rarely saturates a many-channel server.
    """
    size_bytes = min(size_bytes, max(16 * 2**20, psutil.virtual_memory().available // 8))
    started = clock()
    try:
        src = np.empty(size_bytes // 8, dtype=np.float64)
        src.fill(1.0)
        dst = np.empty_like(src)
        np.copyto(dst, src)  # touches every page once, so page faults stay out of the timings
    except MemoryError:
        return None, "not measured: no memory for the test arrays"
    threads = max(1, min(threads, 16))
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    pairs = list(zip(np.array_split(dst, threads), np.array_split(src, threads), strict=True))
    best = {1: float("inf"), threads: float("inf")}
    runs = 0
    try:
        while runs < 2 or (clock() - started < budget_s and runs < 40):
            n = threads if pool is not None and runs % 2 else 1
            t0 = clock()
            if n == 1:
                np.copyto(dst, src)
            else:  # numpy releases the GIL for plain copies, so threads run in parallel
                list(pool.map(lambda pair: np.copyto(*pair), pairs))  # type: ignore[union-attr]
            best[n] = min(best[n], clock() - t0)
            runs += 1
    finally:
        if pool is not None:
            pool.shutdown()
    n_best = min(best, key=lambda k: best[k])
    gbs = 2 * src.nbytes / best[n_best] / 1e9
    return gbs, (
        f"measured: numpy copy of {src.nbytes // 2**20} MiB, read + written bytes, "
        f"best of {runs} ({n_best} thread{'s' if n_best > 1 else ''})"
    )


# --- GPUs -----------------------------------------------------------------------------


def parse_nvidia_smi(text: str) -> tuple[Gpu, ...]:
    """Rows of ``nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits``."""
    gpus = []
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if len(row) < 2 or not row[0].strip().isdigit():
            continue
        index, name = int(row[0]), row[1].strip()
        memory_mib = row[2].strip() if len(row) > 2 else ""
        driver = row[3].strip() if len(row) > 3 and row[3].strip() not in ("", "[N/A]") else None
        memory = int(float(memory_mib) * 2**20) if re.fullmatch(r"\d+(\.\d+)?", memory_mib) else None
        gpus.append(Gpu(index, name, memory, driver, lookup_gpu(name)))
    return tuple(gpus)


def query_nvidia_smi(
    executable: str = "nvidia-smi", timeout_s: float = NVIDIA_SMI_TIMEOUT_S
) -> tuple[tuple[Gpu, ...], str | None]:
    """(GPUs, a note when nvidia-smi exists but failed); no nvidia-smi means no NVIDIA GPU."""
    found = shutil.which(executable)
    if found is None:
        return (), None
    try:
        done = subprocess.run(
            [found, *NVIDIA_SMI_QUERY], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (), f"nvidia-smi failed: {type(exc).__name__}: {exc}"
    if done.returncode != 0:
        return (), f"nvidia-smi exited {done.returncode}: {done.stderr.strip()[:200]}"
    gpus = parse_nvidia_smi(done.stdout)
    unknown = [g.name for g in gpus if g.spec is None]
    return gpus, (f"no datasheet figures for {', '.join(unknown)}" if unknown else None)
