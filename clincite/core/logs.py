"""Logging set-up shared by the command lines and the app: our lines, not the libraries' progress bars."""

from __future__ import annotations

import logging
import os


def quiet_libraries() -> None:
    """Command-line runs show our lines, not the progress bars and debug logs of the libraries underneath."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in ("bm25s", "chromadb", "httpx", "sentence_transformers", "transformers"):
        logging.getLogger(name).setLevel(logging.WARNING)
