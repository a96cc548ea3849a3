"""``Strict``, the base of every config model of ``otel-config.yaml``: each package keeps its
own section's model (``exporters.config``, ``processors.config``, ``web.config``,
``storage.privacy``) and ``collector/config.py`` composes them into the one strict parse
of the file. Here, in the lowest layer, so that every package may import it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are errors, and a parsed config never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
