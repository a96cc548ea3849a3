"""How a model reads to a person, one rule for the terminal and the web: the bench runner,
its reports and every page, URL, badge and MCP answer name a model by ``model_label``."""

from __future__ import annotations


def model_label(model_id: str) -> str:
    """A model as a person reads it: llama-cpp-python names a model by its GGUF's path, whose
    file name says which; any other id (``Qwen/Qwen2.5-7B``, ``llama3.1:8b``) as it is."""
    return model_id.rsplit("/", 1)[-1] if model_id.startswith("/") else model_id
