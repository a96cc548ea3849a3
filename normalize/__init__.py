"""OTLP → the lake's rows."""
