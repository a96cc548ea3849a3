"""The OTLP receivers, the write-ahead log and the flusher and compactor processes."""

DEFAULT_GRPC_ENDPOINT = "127.0.0.1:4317"
DEFAULT_HTTP_ENDPOINT = "127.0.0.1:4318"
DEFAULT_URL = f"http://{DEFAULT_HTTP_ENDPOINT}"  # what an OTLP/HTTP exporter points at by default
DEFAULT_WAL_DIR = "./data/wal"
