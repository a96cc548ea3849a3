"""OpenAI-compatible servers: which kind is behind a base URL, its models, unloading.

Recognized by their own endpoints: Ollama (``/api/tags``), LM Studio
(``/api/v0/models``), llama.cpp's ``llama-server`` (``/props``; in router mode, a
``status`` on each listed model), vLLM (``owned_by: vllm``), llama-cpp-python
(``owned_by: me``). Their version, where they say it: llama-server's ``/props``
``build_info``, Ollama's ``/api/version``, vLLM's ``/version``. Unloading between
models uses the server's own API where it has one (Ollama ``keep_alive: 0``, LM
Studio's and llama-server's router's unload endpoints). llama-cpp-python has none, but a
server started with several models keeps one loaded and swaps it when a request names
another. We never kill processes we did not start.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx


TIMEOUT_S = 5.0
LOAD_TIMEOUT_S = 300.0  # a router loading a model from disk
LOAD_POLL_S = 0.2


class ServerDown(RuntimeError):
    """Nothing answers at the base URL."""


@dataclass(frozen=True)
class ServerModel:
    id: str
    loaded: bool | None = None
    size_bytes: int | None = None
    quantization: str | None = None
    architecture: str | None = None
    path: str | None = None  # a file path the server reports (llama.cpp ids are paths)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerInfo:
    base_url: str
    kind: str  # ollama | lm_studio | llama_cpp | llama_cpp_python | vllm | openai_compatible
    models: tuple[ServerModel, ...]
    model_paths: tuple[str, ...] = ()  # paths the server says it loaded (llama.cpp /props)
    version: str | None = None  # as the server says it; None when it does not

    @property
    def provider(self) -> str:
        """The value for ``gen_ai.provider.name`` on our spans."""
        return {"llama_cpp_python": "llama_cpp"}.get(self.kind, self.kind)

    def paths_for(self, model: str) -> tuple[str, ...]:
        """The files the server says serve ``model``: its own path when the listing gives
        one (a router), else the server's paths (a single-model server's one file)."""
        own = tuple(m.path for m in self.models if m.id == model and m.path)
        return own or self.model_paths


def root_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _get(client: httpx.Client, url: str) -> Any | None:
    try:
        r = client.get(url)
    except httpx.HTTPError:
        return None
    return _json(r) if r.status_code == 200 else None


def _json(r: httpx.Response) -> Any | None:
    """The body as JSON; None when it is not JSON."""
    try:
        return r.json()
    except ValueError:
        return None


def probe(base_url: str, api_key: str = "local") -> ServerInfo:
    """Ask the server what it is and which models it offers; ServerDown if nobody answers."""
    root = root_url(base_url)
    with httpx.Client(timeout=TIMEOUT_S, headers={"Authorization": f"Bearer {api_key}"}) as client:
        try:
            r = client.get(base_url.rstrip("/") + "/models")
        except httpx.HTTPError as exc:
            raise ServerDown(f"no OpenAI-compatible server answers at {base_url} ({type(exc).__name__}: {exc})") from exc
        if r.status_code != 200:
            raise ServerDown(f"{base_url}/models answered {r.status_code}: {r.text[:200]}")
        body = _json(r)
        listing = body.get("data", []) if isinstance(body, dict) else None
        if not isinstance(listing, list) or not all(isinstance(m, dict) for m in listing):
            raise ServerDown(f"{base_url}/models answered 200 but not an OpenAI model list "
                             f"({{\"data\": [...]}}): {r.text[:200]!r}")
        ollama = _get(client, root + "/api/tags")
        if isinstance(ollama, dict) and "models" in ollama:
            return ServerInfo(base_url, "ollama", tuple(_ollama_models(ollama)),
                              version=_version(_get(client, root + "/api/version"), "version"))
        lms = _get(client, root + "/api/v0/models")
        if isinstance(lms, dict) and isinstance(lms.get("data"), list):
            return ServerInfo(base_url, "lm_studio", tuple(_lmstudio_models(lms["data"])))
        props = _get(client, root + "/props")
        if any(isinstance(m.get("status"), dict) for m in listing):  # llama-server in router mode
            return ServerInfo(base_url, "llama_cpp", tuple(_router_model(m) for m in listing),
                              version=_version(props, "build_info"))
        owners = {str(m.get("owned_by", "")) for m in listing}
        models = tuple(ServerModel(id=str(m.get("id")), extra=m) for m in listing)
        if isinstance(props, dict) and ("default_generation_settings" in props or "model_path" in props):
            paths = tuple(p for p in [props.get("model_path")] if p)
            return ServerInfo(base_url, "llama_cpp", models, paths, _version(props, "build_info"))
        if "vllm" in owners:
            return ServerInfo(base_url, "vllm", models, version=_version(_get(client, root + "/version"), "version"))
        if "me" in owners:  # llama-cpp-python's server: the id is the GGUF path
            return ServerInfo(base_url, "llama_cpp_python", models, tuple(m.id for m in models))
        return ServerInfo(base_url, "openai_compatible", models)


def _version(body: Any, key: str) -> str | None:
    value = body.get(key) if isinstance(body, dict) else None
    return str(value)[:100] if isinstance(value, (str, int, float)) and str(value) else None


def identify(base_url: str | None, api_key: str = "local") -> tuple[str, str]:
    """The server's kind and version behind ``base_url``, each "unknown" when it cannot be
    learned (no URL, nobody answering, a server that does not say)."""
    if not base_url:
        return "unknown", "unknown"
    try:
        info = probe(base_url, api_key)
    except ServerDown:
        return "unknown", "unknown"
    return info.kind, info.version or "unknown"


def _router_model(entry: dict[str, Any]) -> ServerModel:
    """A model a llama-server router lists: loaded or not, and its file, read from the
    arguments it starts the model's server with (``--model PATH``, or ``model`` in its preset)."""
    status = entry.get("status") or {}
    args = [str(a) for a in status.get("args") or []]
    path = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-m", "--model")), None)
    if path is None:
        for line in str(status.get("preset") or "").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() in ("model", "m"):
                path = value.strip()
    return ServerModel(id=str(entry.get("id")), loaded=status.get("value") == "loaded", path=path, extra=entry)


def _ollama_models(tags: dict[str, Any]) -> list[ServerModel]:
    out = []
    for m in tags.get("models", []):
        d = m.get("details") or {}
        out.append(ServerModel(id=m.get("name") or m.get("model"), size_bytes=m.get("size"),
                               quantization=d.get("quantization_level"), architecture=d.get("family"), extra=m))
    return out


def _lmstudio_models(data: list[dict[str, Any]]) -> list[ServerModel]:
    return [
        ServerModel(id=m.get("id"), loaded=m.get("state") == "loaded", quantization=m.get("quantization"),
                    architecture=m.get("arch"), extra=m)
        for m in data
        if m.get("type") in (None, "llm", "vlm")
    ]


def load(info: ServerInfo, model: str, timeout_s: float = LOAD_TIMEOUT_S) -> str | None:
    """Have a llama-server router load ``model`` now and wait until it has, so that the
    swap is not timed as the first request's latency (and no request is sent while the
    router replaces one model's server with another's: it drops such a connection). Other
    servers load on the first request; None then. Returns what happened, in words."""
    if info.kind != "llama_cpp" or not any(m.path for m in info.models):
        return None
    root = root_url(info.base_url)
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=30, trust_env=False) as client:
        try:
            while time.monotonic() < deadline:
                listing = _get(client, info.base_url.rstrip("/") + "/models") or {}
                status = next((m.get("status") or {} for m in listing.get("data", []) if m.get("id") == model), {})
                if status.get("value") == "loaded":
                    return "loaded (llama-server router API)"
                if status.get("failed"):
                    return f"llama-server could not load it (exit code {status.get('exit_code')})"
                if status.get("value") == "unloaded":
                    # asked again until it loads: while another model is still stopping, the
                    # router answers "model limit reached, try again later"
                    client.post(root + "/models/load", json={"model": model})
                time.sleep(LOAD_POLL_S)
        except httpx.HTTPError as exc:
            return f"load failed: {exc}"
    return f"not loaded within {timeout_s:.0f} s"


def unload(info: ServerInfo, model: str) -> str:
    """Ask the server to unload ``model``; returns what happened, in words."""
    root = root_url(info.base_url)
    try:
        with httpx.Client(timeout=30) as client:
            if info.kind == "ollama":
                r = client.post(root + "/api/generate", json={"model": model, "keep_alive": 0})
                return "unloaded (ollama keep_alive: 0)" if r.status_code == 200 else f"ollama unload answered {r.status_code}"
            if info.kind == "lm_studio":
                r = client.post(root + "/api/v1/models/unload", json={"instance_id": model})
                return "unloaded (LM Studio API)" if r.status_code == 200 else f"LM Studio unload answered {r.status_code}"
            if info.kind == "llama_cpp" and any(m.path for m in info.models):  # a router
                r = client.post(root + "/models/unload", json={"model": model})
                return ("unloaded (llama-server router API)" if r.status_code == 200
                        else f"llama-server unload answered {r.status_code}")
    except httpx.HTTPError as exc:
        return f"unload failed: {exc}"
    if info.kind == "llama_cpp_python" and len(info.models) > 1:
        # its LlamaProxy closes the loaded model before loading the one a request names
        return ("llama-cpp-python has no unload API; the model stays loaded until a request names another "
                "of the server's models, which replaces it (one model in memory at a time)")
    return f"{info.kind} has no unload API; the model stays loaded (we never kill a server we did not start)"
