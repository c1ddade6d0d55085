"""Upgrading in place: a KB catalogue and an app database written by the release before numbered migrations.

The DDL below is copied verbatim from that release (kb.py `SCHEMA`, datalayer.py `SCHEMA` at commit 1b0231a), with
the rows its code wrote. The new code starts on them; the data must still be there, and `_migrations` must list
every migration (schema version == latest).
"""

from __future__ import annotations

import json
import sqlite3
import uuid

from conftest import make_settings

from clincite.kb.catalogue import catalogue_migrations
from clincite.kb.store import CATALOGUE_FILE, KnowledgeBase
from clincite.web.datalayer import ClinCiteDataLayer, app_migrations, ensure_schema
from clincite.web.metrics import compute_metrics

OLD_CATALOGUE_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    source TEXT PRIMARY KEY,          -- the file name clinicians see cited
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL REFERENCES documents(source) ON DELETE CASCADE,
    title TEXT NOT NULL,
    heading_path TEXT NOT NULL,       -- JSON list
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source, position);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

OLD_APP_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, identifier TEXT NOT NULL UNIQUE,
        metadata TEXT NOT NULL, "createdAt" TEXT)""",
    """CREATE TABLE IF NOT EXISTS threads (id TEXT PRIMARY KEY, "createdAt" TEXT, name TEXT,
        "userId" TEXT REFERENCES users(id) ON DELETE CASCADE, "userIdentifier" TEXT, tags TEXT,
        metadata TEXT NOT NULL DEFAULT '{}')""",
    """CREATE TABLE IF NOT EXISTS steps (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
        "threadId" TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE, "parentId" TEXT, streaming BOOLEAN NOT NULL,
        "waitForAnswer" BOOLEAN, "isError" BOOLEAN, metadata TEXT, tags TEXT, input TEXT, output TEXT,
        "createdAt" TEXT, command TEXT, modes TEXT, start TEXT, "end" TEXT, generation TEXT, "showInput" TEXT,
        language TEXT, indent INT, "defaultOpen" BOOLEAN, "autoCollapse" BOOLEAN)""",
    """CREATE TABLE IF NOT EXISTS elements (id TEXT PRIMARY KEY, "threadId" TEXT REFERENCES threads(id)
        ON DELETE CASCADE, type TEXT, url TEXT, "chainlitKey" TEXT, name TEXT NOT NULL, display TEXT,
        "objectKey" TEXT, size TEXT, page INT, language TEXT, "forId" TEXT, mime TEXT, props TEXT,
        "autoPlay" BOOLEAN, "playerConfig" TEXT)""",
    """CREATE TABLE IF NOT EXISTS feedbacks (id TEXT PRIMARY KEY, "forId" TEXT NOT NULL,
        "threadId" TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE, value INT NOT NULL, comment TEXT,
        "createdAt" TEXT DEFAULT CURRENT_TIMESTAMP)""",
    """CREATE TABLE IF NOT EXISTS answer_records (id TEXT PRIMARY KEY, "stepId" TEXT NOT NULL, "threadId" TEXT,
        "userIdentifier" TEXT, "createdAt" TEXT NOT NULL, question TEXT NOT NULL, mode TEXT NOT NULL,
        search_mode TEXT, cached BOOLEAN NOT NULL, ttft REAL, total REAL, timings TEXT, sub_queries INT,
        stage2 BOOLEAN NOT NULL, degradations TEXT, degradation_count INT NOT NULL, citations INT,
        unverified_citations INT NOT NULL, input_tokens INT, output_tokens INT)""",
    """CREATE INDEX IF NOT EXISTS answer_records_step ON answer_records ("stepId")""",
    """CREATE INDEX IF NOT EXISTS feedbacks_for ON feedbacks ("forId")""",
]

SOURCE = "近视管理白皮书（2025）.md"
PASSAGE = "低浓度阿托品（0.01%–0.05%）可延缓儿童近视进展，常见副作用为畏光。"


def applied(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]


def test_an_old_kb_catalogue_is_upgraded_in_place_and_keeps_its_passages(tmp_path):
    settings = make_settings(tmp_path)
    settings.kb_dir.mkdir(parents=True)
    path = settings.kb_dir / CATALOGUE_FILE
    with sqlite3.connect(path) as old:  # what the old kb.py wrote at its first ingest
        old.executescript(OLD_CATALOGUE_SCHEMA)
        old.execute(
            "INSERT INTO documents VALUES (?,?,?,?,?,?)",
            (SOURCE, f"/docs/{SOURCE}", "近视管理白皮书（2025）", "f" * 64, 1, 1_700_000_000.0),
        )
        old.execute(
            "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?)",
            (
                "c0ffee0000000000beef",
                SOURCE,
                "近视管理白皮书（2025）",
                json.dumps(["药物干预"]),
                0,
                0,
                len(PASSAGE),
                PASSAGE,
                "a" * 64,
            ),
        )
        old.execute("INSERT INTO meta(key, value) VALUES('version', '7')")
    old.close()

    kb = KnowledgeBase(settings)  # the new code starts on the old directory
    try:
        assert kb.catalogue.schema_version == catalogue_migrations.latest
        assert kb.catalogue.document_count() == 1
        chunk = kb.catalogue.get_chunks(["c0ffee0000000000beef"])["c0ffee0000000000beef"]
        assert (chunk.source, chunk.text, chunk.heading_path) == (SOURCE, PASSAGE, ["药物干预"])
        assert chunk.pages is None  # added by a migration; the old rows have no pages
        assert kb.catalogue.version == 7, "the version caches are keyed on survives the upgrade"
    finally:
        kb.close()

    with sqlite3.connect(path) as db:
        assert applied(db) == [step.__name__ for step in catalogue_migrations.steps]
        first_run = db.execute("SELECT name, applied_at FROM _migrations").fetchall()
    db.close()
    KnowledgeBase(settings).close()  # a second start applies nothing again
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name, applied_at FROM _migrations").fetchall() == first_run
    db.close()


async def test_an_old_app_database_is_upgraded_in_place_and_keeps_threads_feedback_and_answers(tmp_path):
    settings = make_settings(tmp_path)
    path = tmp_path / "clincite.sqlite3"
    assert settings.db_url.endswith(str(path))
    user, thread, step = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    with sqlite3.connect(path) as old:  # what the old datalayer.py wrote: one rated answer in one thread
        for statement in OLD_APP_SCHEMA:
            old.execute(statement)
        old.execute(
            'INSERT INTO users (id, identifier, metadata, "createdAt") VALUES (?,?,?,?)',
            (user, "doctor_a", "{}", "2026-11-01T08:00:00Z"),
        )
        old.execute(
            'INSERT INTO threads (id, "createdAt", name, "userId", "userIdentifier", metadata) VALUES (?,?,?,?,?,?)',
            (thread, "2026-11-01T08:00:00Z", "阿托品", user, "doctor_a", "{}"),
        )
        old.execute(
            'INSERT INTO steps (id, name, type, "threadId", streaming, output, "createdAt") VALUES (?,?,?,?,?,?,?)',
            (
                step,
                "ClinCite",
                "assistant_message",
                thread,
                False,
                "**TL;DR：** 0.05% 效果最好。",
                "2026-11-01T08:00:05Z",
            ),
        )
        old.execute(
            'INSERT INTO feedbacks (id, "forId", "threadId", value, comment) VALUES (?,?,?,?,?)',
            (str(uuid.uuid4()), step, thread, 1, "引用准确"),
        )
        old.execute(
            'INSERT INTO answer_records (id, "stepId", "threadId", "userIdentifier", "createdAt", question, '
            "mode, search_mode, cached, ttft, total, timings, sub_queries, stage2, degradations, "
            "degradation_count, citations, unverified_citations, input_tokens, output_tokens) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                str(uuid.uuid4()),
                step,
                thread,
                "doctor_a",
                "2026-11-01T08:00:05Z",
                "阿托品的效果？",
                "llm",
                "hybrid",
                False,
                1.5,
                6.0,
                "{}",
                2,
                False,
                "[]",
                0,
                3,
                0,
                900,
                300,
            ),
        )
    old.close()

    assert await ensure_schema(settings.db_url) == app_migrations.latest  # what the app does at start
    layer = ClinCiteDataLayer(settings)
    try:
        metrics = await compute_metrics(layer)
        assert (metrics["answers"], metrics["rated"], metrics["thumbs_up"]) == (1, 1, 1)
        assert metrics["ttft_p50"] == 1.5
        rows = await layer.query('SELECT output FROM steps WHERE "threadId" = :t', {"t": thread})
        assert rows == [{"output": "**TL;DR：** 0.05% 效果最好。"}]
        owners = await layer.query("SELECT identifier FROM users WHERE id = :u", {"u": user})
        assert owners == [{"identifier": "doctor_a"}]
    finally:
        await layer.engine.dispose()

    with sqlite3.connect(path) as db:
        assert applied(db) == [step.__name__ for step in app_migrations.steps]
    db.close()
    assert await ensure_schema(settings.db_url) == app_migrations.latest  # idempotent on the next start


def test_an_accounts_file_of_an_earlier_release_is_imported_once(tmp_path):
    """users.json as the releases before accounts in SQL wrote it: its accounts log in, keep their session generation
    (old cookies stay valid), and the import happens once (migration m002), not again at every start."""
    import bcrypt

    from clincite.users.store import ACCOUNTS_FILE, UserStore

    settings = make_settings(tmp_path)
    old = {"张医生": {"password_hash": bcrypt.hashpw(b"old-password-1", bcrypt.gensalt()).decode(), "generation": 3}}
    (tmp_path / "users.json").write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    store = UserStore.for_settings(settings)
    assert (tmp_path / ACCOUNTS_FILE).exists()
    assert store.verify("张医生", "old-password-1") is not None
    assert store.generation("张医生") == 3
    store.remove("张医生")
    again = UserStore.for_settings(settings)  # a restart: users.json is still there, but already imported
    assert again.verify("张医生", "old-password-1") is None
    assert again.records.schema_version == 2
