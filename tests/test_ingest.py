"""Ingestion: loading every format, Chinese chunking, incremental runs, bad files."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from conftest import ATROPINE, ROOT, SAMPLE_KB, make_settings

from clincite.chunking import chunk_document
from clincite.ingest import Ingestor
from clincite.kb import KnowledgeBase
from clincite.loaders import LoadedDocument, load_document, parse_markdown

# --- chunking ---------------------------------------------------------------------------------------------------


def test_sample_chunks_are_verbatim_slices_with_metadata():
    path = SAMPLE_KB / ATROPINE
    text = path.read_text(encoding="utf-8")
    document = load_document(path)
    chunks = chunk_document(document, path.name, 300, 500)

    assert document.title == "低浓度阿托品临床应用指南（演示）"
    assert len(chunks) >= 5
    for position, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.start:chunk.end]  # offsets point at the exact passage
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
    document = parse_markdown(text, "测试")
    chunks = chunk_document(document, "t.md", 300, 500)
    assert len(chunks) >= 3
    assert chunks[0].text.startswith("## 护理\n\n")  # a section's first chunk carries its heading line
    for chunk in chunks:
        assert chunk.text.removeprefix("## 护理\n\n").startswith("角膜塑形镜") and chunk.text.endswith("。")
        assert 300 <= len(chunk.text) <= 500 or chunk is chunks[-1]
    for before, after in zip(chunks, chunks[1:]):
        assert after.start < before.end  # one sentence shared
        assert before.end - after.start == len(sentence)


def test_a_sentence_longer_than_the_maximum_is_cut_at_clauses():
    long_sentence = "，".join(["眼轴长度增长过快提示近视进展风险较高"] * 40) + "。"
    document = LoadedDocument("长句", long_sentence, [])
    document.sections = parse_markdown(long_sentence, "长句").sections
    chunks = chunk_document(document, "long.txt", 300, 500)
    assert len(chunks) >= 2
    assert all(len(c.text) <= 500 for c in chunks)
    assert all(c.text.endswith(("，", "。")) for c in chunks)


def test_subsections_merge_under_one_heading_but_not_across_top_level_sections():
    text = ("# 文档\n\n## 甲\n\n### 甲一\n\n" + "甲一内容句子。" * 10 + "\n\n### 甲二\n\n" + "甲二内容句子。" * 10
            + "\n\n## 乙\n\n" + "乙内容句子。" * 10 + "\n")
    chunks = chunk_document(parse_markdown(text, "文档"), "d.md", 300, 500)
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
    (tmp_path / "c.html").write_text("<html><head><style>x{}</style></head><body><h1>红光治疗</h1>"
                                     "<h2>安全性</h2><p>需关注视网膜光损伤风险。</p></body></html>", encoding="utf-8")
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
    shutil.copytree(SAMPLE_KB, docs, ignore=lambda d, names: [n for n in names if "阿托品" not in n and "户外" not in n])
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
    atropine.write_text(atropine.read_text(encoding="utf-8") + "\n## 新增小节\n\n停药前应逐渐减量以减少反弹。\n",
                        encoding="utf-8")
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
    reasons = {name: result[name].detail for name in
               ("empty.md", "broken.pdf", "locked.pdf", "image.md", "slides.pptx", "broken.docx", "scan.pdf",
                ATROPINE)}
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
    from clincite.loaders import SkipFile

    path = tmp_path / "odd.txt"
    path.write_bytes(b"\x81\x30\x81")  # truncated GB18030 four-byte sequence, invalid UTF-8
    with pytest.raises(SkipFile, match="解码"):
        load_document(path)


def test_cli_prints_a_line_per_file_and_a_summary(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLE_KB / ATROPINE, docs)
    (docs / "notes.xyz").write_text("?", encoding="utf-8")
    env = {"KB_DIR": str(tmp_path / "kb"), "EMBEDDING_MODEL": "/nonexistent/model"}
    run = lambda *extra: subprocess.run(  # noqa: E731
        [sys.executable, "ingest.py", str(docs), *extra], cwd=ROOT, capture_output=True, text=True,
        env={**__import__("os").environ, **env}, timeout=300)
    first = run()
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert any(line.startswith("added") and ATROPINE in line for line in lines)
    assert any(line.startswith("skipped") and "notes.xyz" in line and "不支持" in line for line in lines)
    assert lines[-1].startswith("完成：新增 1")
    assert "EMBEDDING_MODEL" in first.stderr  # BM25-only, and it says how to fix it
    second = run()
    assert any(line.startswith("unchanged") and ATROPINE in line for line in second.stdout.splitlines())
    assert "未变 1" in second.stdout.splitlines()[-1]

    (docs / ATROPINE).unlink()
    nothing = subprocess.run([sys.executable, "ingest.py", str(docs / "notes.xyz")], cwd=ROOT, capture_output=True,
                             text=True, env={**__import__("os").environ, **env}, timeout=300)
    assert nothing.returncode == 1  # nothing could be ingested
