"""A real S3-compatible server for tests and benchmarks: ``moto``'s, on a free port.

``moto_server`` runs as a process of its own (like a MinIO would), so a collector killed
with -9 does not take the bucket with it and the bucket's requests can be counted from
its access log. The AWS variables that ``storage.objectstore`` reads are returned for the
caller to put in its (and its children's) environment.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from otelbench.testing.serve import free_port

_REQUEST = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[0-9.]+" (?P<status>\d{3})')


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    def requests(self) -> Counter[str]:
        """Requests the server has answered so far, by method (GET, PUT, HEAD, ...)."""
        counts: Counter[str] = Counter()
        for m in _REQUEST.finditer(self.log.read_text(errors="replace")):
            counts[m["method"]] += 1
        return counts

    def make_bucket(self, name: str) -> str:

        from otelbench.storage.objectstore import S3Options

        fs = S3Options.from_env(self.env).filesystem(allow_bucket_creation=True)
        fs.create_dir(name)
        return f"s3://{name}"


def aws_env(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """``moto_server`` on a free port until the block ends; its env in ``.env``."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="otelbench-moto-", suffix=".log")[1])
    exe = Path(sys.executable).with_name("moto_server")
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    server = S3Server(endpoint, proc, log, aws_env(endpoint))
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"moto_server exited: {log.read_text()[-2000:]}")
            try:
                import urllib.request

                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start in 30 s") from None
                time.sleep(0.1)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        with contextlib.suppress(OSError):
            log.unlink()
