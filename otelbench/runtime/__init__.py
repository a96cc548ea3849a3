"""What ``otelbench serve`` (and ``otelbench demo``) runs and supervises: the collector,
the processors' schedule and the web UI, each child a ``storage.process.Child``."""
