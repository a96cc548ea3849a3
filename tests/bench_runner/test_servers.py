"""bench_runner.servers: what unloading between models says for servers without an unload API."""

from __future__ import annotations

import pytest

from bench_runner.servers import ServerInfo, ServerModel, unload


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

    from bench_runner.servers import ServerDown, probe

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
