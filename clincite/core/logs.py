"""Logging set-up shared by the command lines and the app: our lines, not the libraries' progress bars, and none of
the telemetry of libraries we load but do not use for it."""

from __future__ import annotations

import logging
import os

# The documented off switches, as defaults a clinic can still override. Each is read when its library would start
# sending (Traceloop.init(), a TracerProvider, a hub request), not at import, so setting them before that is enough.
# Chainlit imports literalai, which imports traceloop-sdk and with it OpenTelemetry and some of its instrumentations;
# nothing calls Traceloop.init() today (literalai's LiteralClient.initialize() does), and traceloop-sdk 0.62 has no
# product telemetry of its own, but should anything start it, it must neither trace nor export anything.
LIBRARY_TELEMETRY_OFF = {
    "TRACELOOP_TRACING_ENABLED": "false",  # traceloop-sdk: Traceloop.init() returns before any instrumentation
    "TRACELOOP_METRICS_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",  # OpenTelemetry: every SDK tracer, meter and logger provider is a no-op
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub (under sentence-transformers)
    "ANONYMIZED_TELEMETRY": "False",  # chromadb (the embedded client is also told so; this covers `chroma run`)
}


def switch_off_library_telemetry() -> None:
    """Before Chainlit is imported (app.py): no library we load phones home or traces on our behalf."""
    for key, value in LIBRARY_TELEMETRY_OFF.items():
        os.environ.setdefault(key, value)


def quiet_libraries() -> None:
    """Command-line runs show our lines, not the progress bars and debug logs of the libraries underneath."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("bm25s", "chromadb", "httpx", "sentence_transformers", "transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
