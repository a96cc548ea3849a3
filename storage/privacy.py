"""The ``privacy:`` section of ``otel-config.yaml`` (every key: docs/config.md): which
agents and owners stay private. The queries apply it (``storage/queries/``), the web shows
nothing past it and the processors send nothing past it to a judge that is not local.
"""

from __future__ import annotations

from pydantic import model_validator

from otelbench.storage.config_base import Strict


class Privacy(Strict):
    """Agents whose runs stay private (the web shows nothing of them, later) or whose inputs
    and outputs stay hidden; by agent name or by the ingest key's owner. Their inputs and
    outputs are never sent to a judge endpoint that is not local."""

    private_agents: tuple[str, ...] = ()
    private_owners: tuple[str, ...] = ()
    hide_io_agents: tuple[str, ...] = ()
    hide_io_owners: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _no_blank_names(self) -> Privacy:
        for name in (*self.private_agents, *self.private_owners, *self.hide_io_agents, *self.hide_io_owners):
            if not name.strip():
                raise ValueError("privacy lists name agents and owners: an empty name matches nothing")
        return self

    def restricted(self, agent: str | None, owner: str | None) -> bool:
        """A run whose inputs and outputs must not leave for a non-local endpoint."""
        return (agent in self.private_agents or agent in self.hide_io_agents
                or owner in self.private_owners or owner in self.hide_io_owners)
