"""ClinCite settings: one typed object read from `.env`, then the environment (which wins).

    settings = load_settings()                 # exits with a message naming the key when a value is invalid

Every other module takes a `Settings` instance; nothing else reads `os.environ` for configuration. `.env.example`
documents every key below. Built on pydantic-settings: each field is read from the environment variable of the same
name in upper case (`bm25_top_k` ← `BM25_TOP_K`), unless it names an alias.
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

import limits
from pydantic import (
    AliasChoices,
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def _project_dir() -> Path:
    """The folder relative settings paths start from: the source checkout (where app.py and pyproject.toml live) when
    the package runs from one, else the working directory (an installed wheel has no project folder of its own)."""
    checkout = PACKAGE_DIR.parent
    return checkout if (checkout / "pyproject.toml").is_file() and (checkout / "app.py").is_file() else Path.cwd()


PROJECT_DIR = _project_dir()
log = logging.getLogger("clincite.core.settings")

# Keys that mean "no real key": Chainlit writes the first into OPENAI_API_KEY when CI=true,
# and the others are the placeholders people leave in .env files.
PLACEHOLDER_API_KEYS = frozenset({"", "sk-FAKE-OPENAI-API-KEY", "sk-...", "your-api-key", "changeme", "none"})
AGENT_NAMES = ("decomposition", "relevance_judge", "sufficiency_judge", "answer_generation")


class AgentSettings(BaseModel):
    """Model parameters of one of the four agents.

    `timeout` bounds one HTTP request, which the client retries (LLM_MAX_RETRIES); `budget` bounds the whole stage
    (all attempts). When the budget runs out the stage takes its fallback (docs/architecture.md, failure table).
    """

    model: str
    temperature: float
    max_tokens: int
    timeout: float
    budget: float


class SettingsError(SystemExit):
    """A configuration value is invalid: the message names the key (Chinese for the user)."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True, validate_default=True
    )

    # --- knowledge base and storage (relative paths are relative to the project folder) ---
    data_dir: Path = Path(".data")
    kb_dir: Path | None = None  # default: DATA_DIR/kb
    sample_kb_dir: Path = Path("sample_kb")
    chroma_host: str | None = None
    chroma_port: int = 8000
    chroma_collection_prefix: str = "clincite"

    # --- embeddings ---
    embedding_model: str = "BAAI/bge-small-zh-v1.5"
    embedding_batch_size: int = Field(32, ge=1)
    embedding_device: str = "cpu"

    # --- citations: "auto" cites the file name unless it looks like an identifier ("3089kp01"), then the title ---
    cited_name: Literal["auto", "file", "title"] = "auto"

    # --- chunking ---
    chunk_min_chars: int = Field(300, ge=50)
    chunk_max_chars: int = Field(500, ge=100)

    # --- ingest limits: a file over any of them is skipped with its reason, the run and the KB go on ---
    ingest_max_file_mb: float = Field(100.0, gt=0)  # bytes on disk, any format
    ingest_max_unzipped_mb: float = Field(200.0, gt=0)  # a .docx's declared uncompressed size, all members
    ingest_max_docx_xml_mb: float = Field(40.0, gt=0)  # its XML parts, which python-docx parses into memory
    ingest_max_zip_ratio: float = Field(100.0, gt=1)  # uncompressed / compressed, per member over 1 MB
    ingest_max_chunks_per_document: int = Field(20000, ge=1)
    ingest_max_heading_chars: int = Field(200, ge=10)  # longer heading lines are body text; paths are cut
    ingest_prune_max_fraction: float = Field(0.5, gt=0, le=1)  # --prune refuses to remove more unless --force
    ingest_lock_timeout: float = Field(10.0, ge=0)  # seconds a second ingest waits for the running one
    # The parse of one file runs in a child process within these budgets; a file over either is skipped with its
    # reason and the run (and its lock) goes on: a flate-bomb PDF cannot keep the KB locked for hours.
    ingest_file_timeout: float = Field(300.0, gt=0)  # seconds
    ingest_file_memory_mb: float = Field(1024.0, gt=0)  # address space on top of the parser's own

    # --- reading the KB in the app (ingest is the only writer) ---
    kb_reload_interval: float = Field(2.0, gt=0)  # seconds between checks for a newly published KB version
    vector_store_timeout: float = Field(5.0, gt=0)  # a semantic search slower than this counts as a failure
    vector_store_retry: float = Field(10.0, ge=0)  # seconds of BM25-only before the vector store is tried again

    # --- retrieval ---
    bm25_top_k: int = Field(5, ge=1)
    semantic_top_k: int = Field(5, ge=1)
    bm25_threshold: float = 0.0
    semantic_threshold: float = 0.5
    # calibrated: the floor is also raised to what the embedding model scores off-topic questions in this KB (cosine
    # scales differ per model); fixed: SEMANTIC_THRESHOLD only. SEMANTIC_THRESHOLD=0 turns the floor off either way.
    semantic_floor: Literal["calibrated", "fixed"] = "calibrated"

    # --- LLM provider ---
    openai_api_key: SecretStr = SecretStr("")
    openai_base_url: str | None = None
    offline_mode: Literal["auto", "on", "off"] = "auto"
    llm_output_mode: Literal["tool", "native", "prompted"] = "tool"
    llm_max_retries: int = Field(2, ge=0)
    llm_max_concurrency: int = Field(160, ge=1)  # 20 clinicians × the per-question cap (binds only beyond 20)
    llm_max_concurrency_per_question: int = Field(8, ge=1)  # one question cannot take every slot

    # --- the four agents: per-request timeout (retried) inside a larger per-stage budget ---
    decomposition_model: str = "gpt-4.1"
    decomposition_temperature: float = 0.0
    decomposition_max_tokens: int = 800
    decomposition_timeout: float = Field(3.0, gt=0)
    decomposition_budget: float = Field(4.0, gt=0)
    relevance_judge_model: str = "gpt-4.1"
    relevance_judge_temperature: float = 0.0
    relevance_judge_max_tokens: int = 1500
    relevance_judge_timeout: float = Field(6.0, gt=0)
    relevance_judge_budget: float = Field(7.0, gt=0)
    sufficiency_judge_model: str = "gpt-4.1"
    sufficiency_judge_temperature: float = 0.0
    sufficiency_judge_max_tokens: int = 800
    sufficiency_judge_timeout: float = Field(3.5, gt=0)
    sufficiency_judge_budget: float = Field(4.5, gt=0)
    answer_generation_model: str = "gpt-4.1"
    answer_generation_temperature: float = 0.2
    answer_generation_max_tokens: int = 2000
    answer_generation_timeout: float = Field(20.0, gt=0)
    answer_generation_budget: float = Field(120.0, gt=0)
    # No answer token within this many seconds: the clinician gets the extractive report of the evidence instead
    # (verbatim sentences, marked as degraded) rather than an empty screen.
    answer_first_token_budget: float = Field(5.0, gt=0)

    # --- pipeline ---
    max_sub_queries: int = Field(5, ge=1)
    max_additional_queries: int = Field(5, ge=0)
    history_turns: int = Field(3, ge=0)
    # A verdict that wants stage 2 later than this (seconds into the question) is answered from what was found:
    # with a hung agent in stage 1, stage 2 would push the first report token past ~10 s.
    stage2_deadline: float = Field(8.0, gt=0)
    answer_cache_size: int = Field(256, ge=0)
    # A question that asks one thing is answered from its own judged evidence while the decomposition still runs
    # (the sufficiency judge still guards it); off: every question waits for the decomposition.
    fast_path: bool = True
    # A question that means the same as one answered before on this KB version is answered from the cache (labelled,
    # with 重新回答); off: only the same words hit. Embedding cosine from which two questions with the same aspects,
    # domain terms and numbers count as the same (when an embedding model is loaded).
    similar_question_cache: bool = True
    similar_question_threshold: float = Field(0.9, gt=0, le=1)

    # --- reranking (optional): a cross-encoder orders each judge's hits by how well they answer the whole question ---
    reranker_model: str = ""  # a sentence-transformers CrossEncoder name or folder, e.g. BAAI/bge-reranker-base
    reranker_device: str = "cpu"
    reranker_batch_size: int = Field(16, ge=1)

    # --- web app ---
    database_url: str | None = Field(None, validation_alias=AliasChoices("CLINCITE_DATABASE_URL"))
    # SQLite only: seconds a write waits for the database to be free before it fails with "database is locked"
    sqlite_busy_timeout: float = Field(30.0, gt=0)
    users_file: Path | None = None  # default: DATA_DIR/users.json
    dev_login: bool = Field(False, validation_alias=AliasChoices("CLINCITE_DEV_LOGIN"))
    # Failed logins allowed per client address, and per account from one address, within a moving window ("limits"
    # notation, e.g. "5/15 minutes"); past it, that address is refused without checking the password until the window
    # moves on (web/auth.py LoginThrottle).
    login_account_limit: str = "5/15 minutes"
    login_address_limit: str = "20/15 minutes"
    # Guessing spread over many addresses: the account's logins from addresses it never logged in from wait this long
    # at most (a back-off doubling from 1 s after LOGIN_ACCOUNT_LIMIT failures), instead of a lock-out for everyone.
    login_backoff_max_seconds: float = Field(60.0, gt=0)
    # --- several app workers (docs/deploy.md) ---
    # How many app processes serve this installation, on all machines together. Above 1, everything they share must
    # be on a server: PostgreSQL (CLINCITE_DATABASE_URL), a Chroma server (CHROMA_HOST) and Redis (REDIS_URL).
    workers: int = Field(1, ge=1)
    worker_name: str | None = None  # shown by /clincite/health (default: host name and process id)
    # Redis (Debian's redis-server): login throttling counted across workers, logouts and KB versions pushed to every
    # worker at once. Unset: in-process counters, for one process.
    redis_url: str | None = None
    # Chainlit signs login cookies with it (it reads the variable itself); read here only to refuse several workers
    # that would each make their own (a login would then be valid on one worker only).
    chainlit_auth_secret: SecretStr | None = None
    # Login cookies carry the Secure flag: auto = when the request came over HTTPS (TLS, or a trusted proxy's
    # X-Forwarded-Proto), true = always, false = never.
    cookie_secure: Literal["auto", "true", "false"] = "auto"
    # The library page's upload: files at most per upload (each within INGEST_MAX_FILE_MB); they are staged in
    # DATA_DIR/uploads and ingested one upload at a time per knowledge base, by the same ingest as the command line.
    upload_max_files: int = Field(20, ge=1)
    # Seconds a browser upload's ingest waits for another ingest of the same KB (e.g. one run from a shell) to end.
    upload_lock_wait: float = Field(1800.0, ge=0)
    # What one clinician can ask of the shared server: questions running at once (the rest wait in line, told how
    # many are ahead), the length of a question and of a feedback comment, and the largest Socket.IO frame accepted
    # (big enough that a question far over the limit still arrives and gets its Chinese message).
    questions_in_flight_per_clinician: int = Field(2, ge=1)
    question_max_chars: int = Field(2000, ge=10)
    feedback_comment_max_chars: int = Field(2000, ge=10)
    socket_max_message_mb: float = Field(4.0, gt=0)
    # The app refuses to start as root (a file it serves or a parser it runs would then reach everything on the
    # machine) unless this says the operator means it (containers whose only user is root; the test suite).
    allow_root: bool = False

    @field_validator("login_account_limit", "login_address_limit")
    @classmethod
    def _rate_limit(cls, value: str) -> str:
        try:
            limits.parse(value)
        except ValueError:
            raise ValueError("应写成“次数/时间窗”，例如 5/15 minutes") from None
        return value

    @model_validator(mode="after")
    def _resolve_paths(self) -> Settings:
        self.data_dir = _absolute(self.data_dir)
        self.kb_dir = _absolute(self.kb_dir) if self.kb_dir else self.data_dir / "kb"
        self.sample_kb_dir = _absolute(self.sample_kb_dir)
        self.users_file = _absolute(self.users_file) if self.users_file else self.data_dir / "users.json"
        if self.chunk_max_chars <= self.chunk_min_chars:
            raise ValueError("CHUNK_MAX_CHARS must be larger than CHUNK_MIN_CHARS")
        if self.workers > 1 and (missing := self.unshared_parts()):
            raise PydanticCustomError(
                "not_shareable",
                "WORKERS={workers}：多个工作进程只能共享服务器上的数据，以下设置还不满足：{missing}。"
                "请按 docs/deploy.md 配置，或设 WORKERS=1。",
                {"workers": self.workers, "missing": "；".join(missing)},
            )
        return self

    def unshared_parts(self) -> list[str]:
        """What this configuration keeps inside one process or on one disk (Chinese, for the refusal message)."""
        missing = []
        if self.db_url.startswith("sqlite"):
            missing.append("CLINCITE_DATABASE_URL 未设置（SQLite 只能由一个进程写入），需 postgresql+asyncpg://…")
        if not self.chroma_host:
            missing.append("CHROMA_HOST 未设置（向量库在本机磁盘上），需 Chroma 服务器")
        if not self.redis_url:
            missing.append("REDIS_URL 未设置（登录限流和退出登录只在本进程内有效），需 Redis")
        if self.chainlit_auth_secret is None:
            missing.append("CHAINLIT_AUTH_SECRET 未设置（各进程会各自生成登录密钥），需所有工作进程使用同一个值")
        return missing

    def agent(self, name: str) -> AgentSettings:
        return AgentSettings(**{key: getattr(self, f"{name}_{key}") for key in AgentSettings.model_fields})

    @property
    def decomposition(self) -> AgentSettings:
        return self.agent("decomposition")

    @property
    def relevance_judge(self) -> AgentSettings:
        return self.agent("relevance_judge")

    @property
    def sufficiency_judge(self) -> AgentSettings:
        return self.agent("sufficiency_judge")

    @property
    def answer_generation(self) -> AgentSettings:
        return self.agent("answer_generation")

    @property
    def offline(self) -> bool:
        """True when the agents must run on the deterministic offline models (no network)."""
        if self.offline_mode == "on":
            return True
        if self.offline_mode == "off":
            return False
        return self.openai_api_key.get_secret_value().strip() in PLACEHOLDER_API_KEYS

    @property
    def uploads_dir(self) -> Path:
        """Where the library page stages uploaded files (one folder per upload); they stay as the documents' files."""
        return self.data_dir / "uploads"

    @property
    def db_url(self) -> str:
        """SQLAlchemy URL of the app database (feedback, threads, answer records)."""
        return self.database_url or f"sqlite+aiosqlite:///{self.data_dir / 'clincite.sqlite3'}"


def _absolute(path: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else PROJECT_DIR / path


def env_file() -> Path | None:
    """`.env` in the project folder, or CLINCITE_ENV_FILE (tests point it at /dev/null)."""
    return Path(os.environ.get("CLINCITE_ENV_FILE") or PROJECT_DIR / ".env")


def load_settings(env: str | Path | None = None) -> Settings:
    """Read `.env`, then the environment; an invalid value exits with a message that names its key."""
    try:
        return Settings(_env_file=env or env_file())
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc)) from None


def describe_errors(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        key = "_".join(str(part) for part in error["loc"]).upper() or "设置"
        value = error.get("input")
        shown = "" if key == "OPENAI_API_KEY" or isinstance(value, dict) else f"（当前值 “{value}”）"
        problems.append(f"- {key}{shown}：{error['msg']}")
        log.error("Invalid setting %s: %s", key, error["msg"])
    return "配置错误，请检查 .env 或环境变量：\n" + "\n".join(problems)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings of a command-line run (read once)."""
    return load_settings()
