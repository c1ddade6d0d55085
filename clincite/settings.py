"""ClinCite settings: one typed object read from `.env` and the environment.

Every other module takes a `Settings` instance (usually from `get_settings()`); nothing else reads `os.environ`
for configuration. `.env.example` documents every key below.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from dotenv import load_dotenv
from pydantic import BaseModel, Field

PROJECT_DIR = Path(__file__).resolve().parent.parent

# Keys that mean "no real key": Chainlit writes the first into OPENAI_API_KEY when CI=true,
# and the others are the placeholders people leave in .env files.
PLACEHOLDER_API_KEYS = frozenset({"", "sk-FAKE-OPENAI-API-KEY", "sk-...", "your-api-key", "changeme", "none"})


class AgentSettings(BaseModel):
    """Model parameters of one of the four agents."""

    model: str = "gpt-4.1"
    temperature: float = 0.0
    max_tokens: int = 1500
    timeout: float = 60.0


class Settings(BaseModel):
    # --- knowledge base and storage ---
    data_dir: Path = PROJECT_DIR / ".data"
    kb_dir: Path = PROJECT_DIR / ".data" / "kb"
    sample_kb_dir: Path = PROJECT_DIR / "sample_kb"
    chroma_host: str | None = None
    chroma_port: int = 8000
    chroma_collection_prefix: str = "clincite"

    # --- embeddings ---
    embedding_model: str = "BAAI/bge-small-zh-v1.5"
    embedding_batch_size: int = 32
    embedding_device: str = "cpu"

    # --- chunking ---
    chunk_min_chars: int = 300
    chunk_max_chars: int = 500

    # --- retrieval ---
    bm25_top_k: int = 5
    semantic_top_k: int = 5
    bm25_threshold: float = 0.0
    semantic_threshold: float = 0.5

    # --- LLM provider ---
    openai_api_key: str = ""
    openai_base_url: str | None = None
    offline_mode: Literal["auto", "on", "off"] = "auto"
    llm_output_mode: Literal["tool", "native", "prompted"] = "tool"
    llm_max_retries: int = 2
    llm_max_concurrency: int = 8
    llm_request_timeout: float = 120.0

    # --- the four agents ---
    decomposition: AgentSettings = Field(default_factory=lambda: AgentSettings(max_tokens=800, timeout=30))
    relevance_judge: AgentSettings = Field(default_factory=lambda: AgentSettings(max_tokens=1500, timeout=45))
    sufficiency_judge: AgentSettings = Field(default_factory=lambda: AgentSettings(max_tokens=800, timeout=30))
    answer_generation: AgentSettings = Field(
        default_factory=lambda: AgentSettings(temperature=0.2, max_tokens=2000, timeout=90)
    )

    # --- pipeline ---
    max_sub_queries: int = 5
    max_additional_queries: int = 5
    history_turns: int = 3
    answer_cache_size: int = 256

    # --- web app ---
    database_url: str | None = None
    users_file: Path = PROJECT_DIR / ".data" / "users.json"
    dev_login: bool = False

    @property
    def offline(self) -> bool:
        """True when the agents must run on the deterministic offline models (no network)."""
        if self.offline_mode == "on":
            return True
        if self.offline_mode == "off":
            return False
        return self.openai_api_key.strip() in PLACEHOLDER_API_KEYS

    @property
    def db_url(self) -> str:
        """SQLAlchemy URL of the app database (feedback, threads, answer records)."""
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'clincite.sqlite3'}"


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def _agent_from_env(prefix: str, default: AgentSettings) -> AgentSettings:
    return AgentSettings(
        model=_env(f"{prefix}_MODEL", default.model),
        temperature=float(_env(f"{prefix}_TEMPERATURE", str(default.temperature))),
        max_tokens=int(_env(f"{prefix}_MAX_TOKENS", str(default.max_tokens))),
        timeout=float(_env(f"{prefix}_TIMEOUT", str(default.timeout))),
    )


def _path(name: str, default: Path, base: Path = PROJECT_DIR) -> Path:
    raw = _env(name)
    if raw is None:
        return default
    path = Path(raw).expanduser()
    return path if path.is_absolute() else (base / path)


def load_settings(env_file: str | Path | None = None) -> Settings:
    """Read `.env` (without overriding real environment variables) and build a Settings object."""
    load_dotenv(env_file or os.environ.get("CLINCITE_ENV_FILE") or PROJECT_DIR / ".env", override=False)
    defaults = Settings()
    data_dir = _path("DATA_DIR", defaults.data_dir)
    raw = {
        "data_dir": data_dir,
        "kb_dir": _path("KB_DIR", data_dir / "kb"),
        "sample_kb_dir": _path("SAMPLE_KB_DIR", defaults.sample_kb_dir),
        "chroma_host": _env("CHROMA_HOST"),
        "chroma_port": _env("CHROMA_PORT", str(defaults.chroma_port)),
        "chroma_collection_prefix": _env("CHROMA_COLLECTION_PREFIX", defaults.chroma_collection_prefix),
        "embedding_model": _env("EMBEDDING_MODEL", defaults.embedding_model),
        "embedding_batch_size": _env("EMBEDDING_BATCH_SIZE", str(defaults.embedding_batch_size)),
        "embedding_device": _env("EMBEDDING_DEVICE", defaults.embedding_device),
        "chunk_min_chars": _env("CHUNK_MIN_CHARS", str(defaults.chunk_min_chars)),
        "chunk_max_chars": _env("CHUNK_MAX_CHARS", str(defaults.chunk_max_chars)),
        "bm25_top_k": _env("BM25_TOP_K", str(defaults.bm25_top_k)),
        "semantic_top_k": _env("SEMANTIC_TOP_K", str(defaults.semantic_top_k)),
        "bm25_threshold": _env("BM25_THRESHOLD", str(defaults.bm25_threshold)),
        "semantic_threshold": _env("SEMANTIC_THRESHOLD", str(defaults.semantic_threshold)),
        "openai_api_key": _env("OPENAI_API_KEY", ""),
        "openai_base_url": _env("OPENAI_BASE_URL"),
        "offline_mode": _env("OFFLINE_MODE", defaults.offline_mode),
        "llm_output_mode": _env("LLM_OUTPUT_MODE", defaults.llm_output_mode),
        "llm_max_retries": _env("LLM_MAX_RETRIES", str(defaults.llm_max_retries)),
        "llm_max_concurrency": _env("LLM_MAX_CONCURRENCY", str(defaults.llm_max_concurrency)),
        "llm_request_timeout": _env("LLM_REQUEST_TIMEOUT", str(defaults.llm_request_timeout)),
        "decomposition": _agent_from_env("DECOMPOSITION", defaults.decomposition),
        "relevance_judge": _agent_from_env("RELEVANCE_JUDGE", defaults.relevance_judge),
        "sufficiency_judge": _agent_from_env("SUFFICIENCY_JUDGE", defaults.sufficiency_judge),
        "answer_generation": _agent_from_env("ANSWER_GENERATION", defaults.answer_generation),
        "max_sub_queries": _env("MAX_SUB_QUERIES", str(defaults.max_sub_queries)),
        "max_additional_queries": _env("MAX_ADDITIONAL_QUERIES", str(defaults.max_additional_queries)),
        "history_turns": _env("HISTORY_TURNS", str(defaults.history_turns)),
        "answer_cache_size": _env("ANSWER_CACHE_SIZE", str(defaults.answer_cache_size)),
        "database_url": _env("CLINCITE_DATABASE_URL"),
        "users_file": _path("USERS_FILE", data_dir / "users.json"),
        "dev_login": (_env("CLINCITE_DEV_LOGIN", "false") or "").lower() in ("1", "true", "yes", "on"),
    }
    return Settings.model_validate(raw)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once)."""
    return load_settings()
