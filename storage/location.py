"""Where a lake lives: a local folder (or ``file://`` URI) or ``s3://bucket/prefix``, and
the filesystem (``storage.fs.LakeFS``) that reaches it."""

from __future__ import annotations

import os
import re

from otelbench.storage import is_remote
from otelbench.storage.fs import LakeFS, LakeLocationError

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def open_fs(location: str | os.PathLike[str]) -> LakeFS:
    """The filesystem of the lake at ``location``: a local folder (or ``file://`` URI) or
    ``s3://bucket/prefix`` (``storage.objectstore``; where the server is: the AWS
    variables of the environment)."""
    text = os.fspath(location)
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif is_remote(text):
        # an S3 client (fsspec, pyarrow's S3 layer) loads only into processes of a bucket's lake
        from otelbench.storage.objectstore import ObjectLakeFS

        return ObjectLakeFS(text)
    elif _SCHEME.match(text):
        raise LakeLocationError(
            f"lake location {text!r}: a local folder or s3://bucket/prefix (S3-compatible object storage)"
        )
    return LakeFS(text)
