"""Environment variables otelbench sets for its own processes, and the user's environment
back for the commands of theirs it runs.

The CLI turns off what our processes do not need — pydantic plugins (logfire's loaded all of
logfire into every collector process), gRPC's INFO lines — where the user has not set the
variable, and its child processes inherit that. A command of the user's (``suite run``'s
agent) must see the user's environment instead: an agent whose pydantic plugin is its
telemetry would otherwise be measured without it. The names set are listed in
``DEFAULTED`` (inherited too, so that a CLI started by another one knows them).

Light on purpose (nothing but the standard library): the CLI imports it before any
module that defines a pydantic model.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

DEFAULTED = "OTELBENCH_DEFAULTED"


def set_default(environ: MutableMapping[str, str], name: str, value: str) -> None:
    """``environ[name] = value`` unless the user set it; remembered in ``DEFAULTED``."""
    if name in environ:
        return
    environ[name] = value
    environ[DEFAULTED] = ",".join(filter(None, [*environ.get(DEFAULTED, "").split(","), name]))


def users(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without what ``set_default`` added: the user's own environment."""
    ours = set(environ.get(DEFAULTED, "").split(",")) | {DEFAULTED}
    return {k: v for k, v in environ.items() if k not in ours}
