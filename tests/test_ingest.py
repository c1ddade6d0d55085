"""Ingestion: loading every format, Chinese chunking, incremental runs, bad files."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ATROPINE, ROOT, SAMPLE_KB, make_settings

import ingest
from clincite.ingest.chunking import chunk_document
from clincite.ingest.loaders import LoadedDocument, load_document, load_markdown
from clincite.ingest.pipeline import Ingestor
from clincite.kb.store import KnowledgeBase

# --- chunking ---------------------------------------------------------------------------------------------------


def test_sample_chunks_are_verbatim_slices_with_metadata():
    path = SAMPLE_KB / ATROPINE
    document = load_document(path)
    text = document.text  # the document as loaded: Markdown syntax gone, words and offsets kept
    chunks = chunk_document(document, path.name, 300, 500)

    assert document.title == "低浓度阿托品临床应用指南（演示）"
    assert len(chunks) >= 5
    for position, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.start : chunk.end]  # offsets point at the exact passage
        assert chunk.position == position
        assert chunk.source == ATROPINE and chunk.title == document.title
        assert len(chunk.text) <= 500
        assert chunk.text.rstrip()[-1] in "。！？；!?;）)”" or chunk.text.rstrip().endswith("|"), chunk.text[-30:]
    side_effects = [c for c in chunks if "一是畏光" in c.text]
    assert side_effects and side_effects[0].heading_path[0] == "不良反应及处理"
    body = [c for c in chunks if len(c.text) > 100]
    assert sum(len(c.text) for c in body) / len(body) >= 250  # packed towards 300–500, not one chunk per line


def test_chunk_ids_are_stable_and_unique():
    document = load_document(SAMPLE_KB / ATROPINE)
    first = chunk_document(document, ATROPINE)
    again = chunk_document(document, ATROPINE)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)


def test_sentences_are_never_cut_and_overlap_by_one_sentence():
    sentence = "角膜塑形镜需要规范验配与定期复查，护理不当可能引起角膜感染。"  # 31 characters
    text = "# 测试\n\n## 护理\n\n" + sentence * 40
    document = load_markdown(text, "测试")
    chunks = chunk_document(document, "t.md", 300, 500)
    assert len(chunks) >= 3
    assert chunks[0].text.startswith("护理\n\n")  # a section's first chunk carries its heading line (no "##")
    assert chunks[0].segments[0].heading and chunks[0].segments[0].path == ["护理"]
    for chunk in chunks:
        assert chunk.text.removeprefix("护理\n\n").startswith("角膜塑形镜") and chunk.text.endswith("。")
        assert 300 <= len(chunk.text) <= 500 or chunk is chunks[-1]
    for before, after in itertools.pairwise(chunks):
        assert after.start < before.end  # one sentence shared
        assert before.end - after.start == len(sentence)


def test_a_sentence_longer_than_the_maximum_is_cut_at_clauses():
    long_sentence = "，".join(["眼轴长度增长过快提示近视进展风险较高"] * 40) + "。"
    document = LoadedDocument("长句", long_sentence, [])
    document.sections = load_markdown(long_sentence, "长句").sections
    chunks = chunk_document(document, "long.txt", 300, 500)
    assert len(chunks) >= 2
    assert all(len(c.text) <= 500 for c in chunks)
    assert all(c.text.endswith(("，", "。")) for c in chunks)


def test_subsections_merge_under_one_heading_but_not_across_top_level_sections():
    text = (
        "# 文档\n\n## 甲\n\n### 甲一\n\n"
        + "甲一内容句子。" * 10
        + "\n\n### 甲二\n\n"
        + "甲二内容句子。" * 10
        + "\n\n## 乙\n\n"
        + "乙内容句子。" * 10
        + "\n"
    )
    chunks = chunk_document(load_markdown(text, "文档"), "d.md", 300, 500)
    assert any("甲一" in c.text and "甲二" in c.text for c in chunks)  # short siblings merged, headings kept
    assert not any("甲" in c.text and "乙" in c.text for c in chunks)
    merged = next(c for c in chunks if "甲二" in c.text)
    assert merged.heading_path == ["甲"]


# --- formats ----------------------------------------------------------------------------------------------------


def make_pdf(path, lines):
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    c = canvas.Canvas(str(path))
    c.setFont("STSong-Light", 12)
    for i, line in enumerate(lines):
        c.drawString(72, 750 - 20 * i, line)
    c.save()


def make_docx(path):
    import docx

    document = docx.Document()
    document.add_heading("近视随访手册", level=1)
    document.add_heading("随访间隔", level=2)
    document.add_paragraph("使用低浓度阿托品的儿童建议每3至6个月复查屈光度和眼轴长度。")
    document.save(str(path))


def test_every_supported_format_loads(tmp_path):
    (tmp_path / "a.md").write_text("# 标题甲\n\n## 小节\n\n正文一句。\n", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes("户外活动每天两小时有助于预防近视。".encode("gb18030"))
    (tmp_path / "c.html").write_text(
        "<html><head><style>x{}</style></head><body><h1>红光治疗</h1>"
        "<h2>安全性</h2><p>需关注视网膜光损伤风险。</p></body></html>",
        encoding="utf-8",
    )
    make_pdf(tmp_path / "d.pdf", ["角膜塑形镜夜间佩戴可暂时降低近视度数。"])
    make_docx(tmp_path / "e.docx")

    md = load_document(tmp_path / "a.md")
    assert md.title == "标题甲" and md.sections[0].heading_path == ["小节"]
    assert "户外活动每天两小时" in load_document(tmp_path / "b.txt").text  # GB18030 decoded
    html = load_document(tmp_path / "c.html")
    assert html.title == "红光治疗" and "视网膜光损伤" in html.text and "x{}" not in html.text
    assert "角膜塑形镜夜间佩戴" in load_document(tmp_path / "d.pdf").text
    docx_doc = load_document(tmp_path / "e.docx")
    assert docx_doc.title == "近视随访手册" and docx_doc.sections[0].heading_path == ["随访间隔"]


# --- incremental ingest ------------------------------------------------------------------------------------------


@pytest.fixture()
def small_kb(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(
        SAMPLE_KB, docs, ignore=lambda d, names: [n for n in names if "阿托品" not in n and "户外" not in n]
    )
    settings = make_settings(tmp_path)
    kb = KnowledgeBase(settings)
    yield settings, kb, docs
    kb.close()


def statuses(report):
    return {r.name: r.status for r in report.results}


def test_unchanged_files_do_no_work_and_changed_files_are_replaced(small_kb):
    settings, kb, docs = small_kb
    first = Ingestor(settings, kb).run([docs])
    assert set(statuses(first).values()) == {"added"}
    version = kb.catalogue.version
    vectors = kb.vectors(settings.embedding_model).count()
    assert vectors == len(kb.catalogue.chunk_ids()) > 0

    second = Ingestor(settings, kb).run([docs])
    assert set(statuses(second).values()) == {"unchanged"}
    assert kb.catalogue.version == version and second.vectors_added == 0

    atropine = docs / ATROPINE
    old_ids = set(kb.catalogue.chunk_ids(ATROPINE))
    atropine.write_text(
        atropine.read_text(encoding="utf-8") + "\n## 新增小节\n\n停药前应逐渐减量以减少反弹。\n", encoding="utf-8"
    )
    third = Ingestor(settings, kb).run([docs])
    assert statuses(third)[ATROPINE] == "updated"
    new_chunks = kb.catalogue.chunks_of(ATROPINE)
    assert any("逐渐减量" in c.text for c in new_chunks)
    new_ids = {c.id for c in new_chunks}
    assert old_ids & new_ids, "unchanged passages keep their ids (and vectors)"
    assert third.vectors_added == len(new_ids - old_ids)
    store_ids = kb.vectors(settings.embedding_model).all_ids()
    assert store_ids == set(kb.catalogue.chunk_ids()), "old vectors removed, new ones added"


def test_prune_removes_documents_whose_files_are_gone(small_kb):
    settings, kb, docs = small_kb
    Ingestor(settings, kb).run([docs])
    (docs / ATROPINE).unlink()
    kept = Ingestor(settings, kb).run([docs])
    assert ATROPINE in kb.catalogue.documents(), "without --prune nothing is removed"
    assert ATROPINE not in statuses(kept)
    pruned = Ingestor(settings, kb).run([docs], prune=True)
    assert statuses(pruned)[ATROPINE] == "removed"
    assert ATROPINE not in kb.catalogue.documents()
    assert not kb.catalogue.chunk_ids(ATROPINE)
    assert kb.vectors(settings.embedding_model).all_ids() == set(kb.catalogue.chunk_ids())


def test_bad_files_are_skipped_with_reasons_and_the_kb_stays_intact(small_kb, tmp_path):
    from pypdf import PdfWriter

    settings, kb, docs = small_kb
    Ingestor(settings, kb).run([docs])
    before = {s: kb.catalogue.chunk_ids(s) for s in kb.catalogue.documents()}

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "empty.md").write_bytes(b"")
    (bad / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj <<< garbage")
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret")
    with open(bad / "locked.pdf", "wb") as f:
        writer.write(f)
    (bad / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (bad / "slides.pptx").write_bytes(b"PK\x03\x04")
    (bad / "broken.docx").write_bytes(b"not a zip at all")
    (bad / "scan.pdf").write_bytes(b"")  # empty PDF
    make_pdf(bad / "good.pdf", ["散瞳验光是儿童屈光检查的金标准。"])
    # A previously good document that is now corrupt: its old chunks must survive.
    (docs / ATROPINE).write_bytes(b"\xff\xfe\x00\x00" + bytes(range(256)))

    report = Ingestor(settings, kb).run([bad, docs])
    result = {r.name: r for r in report.results}
    assert result["good.pdf"].status == "added"
    reasons = {
        name: result[name].detail
        for name in (
            "empty.md",
            "broken.pdf",
            "locked.pdf",
            "image.md",
            "slides.pptx",
            "broken.docx",
            "scan.pdf",
            ATROPINE,
        )
    }
    assert all(result[name].status == "skipped" for name in reasons)
    assert "空" in reasons["empty.md"] and "空" in reasons["scan.pdf"]
    assert "损坏" in reasons["broken.pdf"]
    assert "加密" in reasons["locked.pdf"]
    assert "二进制" in reasons["image.md"] and "二进制" in reasons[ATROPINE]
    assert "不支持" in reasons["slides.pptx"]
    assert "DOCX" in reasons["broken.docx"]
    after = {s: kb.catalogue.chunk_ids(s) for s in kb.catalogue.documents()}
    assert after[ATROPINE] == before[ATROPINE], "a failing update leaves the old chunks in place"
    assert all(after[s] == ids for s, ids in before.items())
    assert not report.failed_all


def test_undecodable_text_is_skipped(tmp_path):
    from clincite.ingest.loaders import SkipFile

    path = tmp_path / "odd.txt"
    path.write_bytes(b"\x81\x30\x81")  # truncated GB18030 four-byte sequence, invalid UTF-8
    with pytest.raises(SkipFile, match="解码"):
        load_document(path)


@pytest.mark.slow  # the missing model is looked for through sentence-transformers: importing torch takes seconds
def test_cli_prints_a_line_per_file_and_a_summary(tmp_path, run_cli):
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLE_KB / ATROPINE, docs)
    (docs / "notes.xyz").write_text("?", encoding="utf-8")
    env = {"KB_DIR": str(tmp_path / "kb"), "EMBEDDING_MODEL": "/nonexistent/model"}
    first = run_cli(ingest.main, [docs], env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert any(line.startswith("added") and ATROPINE in line for line in lines)
    assert any(line.startswith("skipped") and "notes.xyz" in line and "不支持" in line for line in lines)
    assert lines[-1].startswith("完成：新增 1")
    assert "EMBEDDING_MODEL" in first.stderr  # BM25-only, and it says how to fix it
    second = run_cli(ingest.main, [docs], env)
    assert any(line.startswith("unchanged") and ATROPINE in line for line in second.stdout.splitlines())
    assert "未变 1" in second.stdout.splitlines()[-1]


@pytest.mark.slow
def test_the_ingest_command_exits_1_when_nothing_could_be_ingested(tmp_path):
    """The one command run as a real process: `python ingest.py …` and its exit status, as a script sees it."""
    (tmp_path / "notes.xyz").write_text("?", encoding="utf-8")
    env = {**os.environ, "KB_DIR": str(tmp_path / "kb"), "EMBEDDING_MODEL": "/nonexistent/model"}
    nothing = subprocess.run(
        [sys.executable, "ingest.py", str(tmp_path / "notes.xyz")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert nothing.returncode == 1, nothing.stderr  # nothing could be ingested
    assert "notes.xyz" in nothing.stdout and "不支持" in nothing.stdout


# --- ingest that cannot hurt the KB (issue 11) -------------------------------------------------------------------


def test_prune_refuses_a_missing_root_or_a_mass_removal_unless_forced(small_kb, run_cli):
    settings, kb, docs = small_kb
    Ingestor(settings, kb).run([docs])
    kept = set(kb.catalogue.documents())
    unmounted = docs.with_name("share-not-mounted")
    docs.rename(unmounted)

    missing = Ingestor(settings, kb).run([docs], prune=True)  # the share is not mounted: the folder is gone
    assert "不存在" in missing.prune_refused and set(kb.catalogue.documents()) == kept
    docs.mkdir()  # an empty mount point: every file looks deleted
    empty = Ingestor(settings, kb).run([docs], prune=True)
    assert "超过 50%" in empty.prune_refused and "--force" in empty.prune_refused
    assert set(kb.catalogue.documents()) == kept and not empty.count("removed")

    env = {"KB_DIR": str(settings.kb_dir), "EMBEDDING_MODEL": settings.embedding_model}
    dry = run_cli(ingest.main, [docs, "--prune", "--force", "--dry-run"], env)
    assert sorted(line.split()[1].rstrip(":") for line in dry.stdout.splitlines()[:-1]) == sorted(kept)
    assert all(line.startswith("would-remove") for line in dry.stdout.splitlines()[:-1])
    assert set(kb.catalogue.documents()) == kept, "a dry run removes nothing"
    refused = run_cli(ingest.main, [docs, "--prune"], env)
    assert "拒绝删除" in refused.stderr and set(kb.catalogue.documents()) == kept
    forced = run_cli(ingest.main, [docs, "--prune", "--force"], env)
    assert forced.stdout.count("removed") == len(kept) and not kb.catalogue.documents()
    assert not kb.vectors(settings.embedding_model).all_ids()


def test_the_hash_stored_is_of_the_bytes_that_were_parsed(tmp_path):
    """A file rewritten while it is ingested: the stored hash and the chunks always come from one state of it."""
    import hashlib
    import threading
    import time

    halves = [
        ("# 甲版本\n\n" + "甲版本的内容。" * 40 + "\n\n").encode(),
        ("甲版本的后半。" * 40 + "\n").encode(),
        ("# 乙版本\n\n" + "乙版本内容。" * 50 + "\n\n").encode(),
        ("乙版本的后半。" * 60 + "\n").encode(),
    ]
    # Every state a reader can meet: truncated (empty), first half written, whole — of either version.
    states = [halves[0], halves[0] + halves[1], halves[2], halves[2] + halves[3]]
    texts = {hashlib.sha256(state).hexdigest(): state.decode() for state in states}
    docs = tmp_path / "docs"
    docs.mkdir()
    target = docs / "改写中.md"
    target.write_bytes(states[1])
    stop = threading.Event()

    def rewrite():
        for first, second in itertools.cycle([halves[:2], halves[2:]]):
            if stop.is_set():
                return
            with open(target, "wb") as f:  # O_TRUNC, then the bytes in two writes: as `cp` or an editor saves
                f.write(first)
                f.flush()
                time.sleep(0.0005)
                f.write(second)

    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    stored = 0
    try:
        for run in range(12):
            settings = make_settings(tmp_path / f"kb{run}")
            with KnowledgeBase(settings) as kb:
                result = Ingestor(settings, kb).run([docs]).results[0]
                if result.status == "skipped":  # read while empty, or changing on every attempt
                    assert "空" in result.detail or "修改" in result.detail, result.detail
                    continue
                stored += 1
                record = kb.catalogue.documents()["改写中.md"]
                assert record.file_hash in texts, "the hash is of one state of the file"
                assert all(c.text in texts[record.file_hash] for c in kb.catalogue.chunks_of("改写中.md"))
    finally:
        stop.set()
        writer.join()
    # Once the writer is done, the next run reads the file again (a skipped file was not stored as "unchanged").
    settings = make_settings(tmp_path / "kb-after")
    with KnowledgeBase(settings) as kb:
        assert [r.status for r in Ingestor(settings, kb).run([docs]).results] == ["added"]
        assert kb.catalogue.documents()["改写中.md"].file_hash == hashlib.sha256(target.read_bytes()).hexdigest()
    print(f"{stored} of 12 runs during the rewrites stored one whole state of the file; the others skipped it")


def test_one_writer_a_second_ingest_waits_then_gives_up(small_kb, run_cli):
    settings, kb, docs = small_kb
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from filelock import FileLock; "
            "lock = FileLock(sys.argv[1]); lock.acquire(); print('locked', flush=True); "
            "time.sleep(60)",
            str(kb.dir / "ingest.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        from clincite.kb.store import IngestBusy

        with pytest.raises(IngestBusy, match="另一个导入进程"):
            Ingestor(settings.model_copy(update={"ingest_lock_timeout": 0.3}), kb).run([docs])
        busy = run_cli(
            ingest.main,
            [docs],
            {"KB_DIR": str(settings.kb_dir), "INGEST_LOCK_TIMEOUT": "0.3", "EMBEDDING_MODEL": settings.embedding_model},
        )
        assert busy.returncode == 1 and "另一个导入进程" in busy.stderr and not busy.stdout
        assert kb.catalogue.document_count() == 0
    finally:
        holder.kill()  # a killed holder releases the lock (the kernel drops its fcntl lock)
        holder.wait()
    assert Ingestor(settings, kb).run([docs]).count("added") == 2


# Enough chunks that adding their vectors (batches of 64, hashing embedder) takes seconds: time to kill it midway.
PARAGRAPHS_TO_KILL_IN = 6_000


@pytest.mark.slow
def test_sigkill_mid_ingest_leaves_the_catalogue_intact_and_a_rerun_heals_orphan_vectors(tmp_path):
    """Killed while a document's vectors are being added (before its catalogue commit): orphans, nothing broken."""
    import sqlite3
    import time

    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLE_KB / ATROPINE, docs / "a_first.md")
    sentence = "眼轴长度每年增长超过零点三毫米提示近视进展较快，需要调整干预方案并缩短随访间隔。"
    paragraphs = [f"第{i}段：{sentence}" for i in range(PARAGRAPHS_TO_KILL_IN)]
    (docs / "b_big.md").write_text("# 大文档\n\n" + "\n\n".join(paragraphs), encoding="utf-8")
    settings = make_settings(tmp_path)
    env = {**os.environ, "KB_DIR": str(settings.kb_dir), "EMBEDDING_MODEL": settings.embedding_model}
    proc = subprocess.Popen(
        [sys.executable, "ingest.py", str(docs)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def counts() -> tuple[int, int]:
        """(vectors in Chroma, chunks in the catalogue), read from their SQLite files as an outsider."""
        try:
            chroma = sqlite3.connect(f"file:{settings.kb_dir / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)
            catalogue = sqlite3.connect(f"file:{settings.kb_dir / 'catalogue.sqlite3'}?mode=ro", uri=True)
            try:
                return (
                    chroma.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0],
                    catalogue.execute("SELECT COUNT(*) FROM chunks").fetchone()[0],
                )
            finally:
                chroma.close()
                catalogue.close()
        except sqlite3.Error:
            return 0, 0

    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            vectors, chunks = counts()
            if chunks and vectors > chunks:  # b_big.md's vectors are going in; its chunks are not committed
                break
            time.sleep(0.05)
        assert proc.poll() is None, "ingest finished before it could be killed midway"
        proc.kill()  # SIGKILL: no cleanup of any kind
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    with KnowledgeBase(settings) as kb:
        check = sqlite3.connect(settings.kb_dir / "catalogue.sqlite3")
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        check.close()
        documents = kb.catalogue.documents()
        assert set(documents) == {"a_first.md"}, "the big document was not committed"
        assert len(kb.catalogue.chunk_ids("a_first.md")) == documents["a_first.md"].chunk_count
        orphans = kb.vectors(settings.embedding_model).all_ids() - set(kb.catalogue.chunk_ids())
        assert orphans, "killed after some of b_big.md's vectors were added"

    rerun = subprocess.run(
        [sys.executable, "ingest.py", str(docs)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "unchanged  a_first.md" in rerun.stdout and "added      b_big.md" in rerun.stdout
    with KnowledgeBase(settings) as kb:
        vectors = kb.vectors(settings.embedding_model).all_ids()
        assert vectors == set(kb.catalogue.chunk_ids()), "orphans removed, all embedded"


def test_a_file_is_read_while_the_server_holds_over_a_thousand_descriptors(tmp_path):
    """A busy server holds a socket per clinician: an upload must still be read when the parser's pipe gets a
    descriptor above 1024, which select() cannot watch."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLE_KB / ATROPINE, docs / ATROPINE)
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        settings = make_settings(tmp_path, embedding_model="/nonexistent/model")
        report = Ingestor(settings, KnowledgeBase(settings)).run([docs])
    finally:
        for fd in held:
            os.close(fd)
    assert report.count("added") == 1, [(r.name, r.status, r.detail) for r in report.results]
