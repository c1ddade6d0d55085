"""bench/eval_answers.py end to end on a tiny docs folder: answerable, unanswerable and follow-up cases, --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

DOCS = {
    "阿托品滴眼液（测试）.md": (
        "# 阿托品滴眼液\n\n## 用法用量\n\n低浓度阿托品滴眼液每晚睡前每眼滴一滴，常用浓度为0.01%。\n\n"
        "## 不良反应\n\n常见副作用是畏光和近距离视物模糊，多数儿童可以耐受，必要时配戴变色眼镜减轻畏光。\n"
    ),
    "角膜塑形镜护理（测试）.md": (
        "# 角膜塑形镜护理\n\n## 镜片护理\n\n角膜塑形镜每天摘镜后用专用护理液揉搓清洗，禁止用自来水冲洗镜片。\n\n"
        "## 禁忌证\n\n眼部有活动性炎症或严重干眼的儿童不宜验配。\n"
    ),
    # Two more documents: BM25 gives no weight to a term found in half of the passages or more.
    "户外活动（测试）.md": "# 户外活动\n\n儿童每天户外活动两小时可以减少近视的发生，课间十分钟也应走出教室。\n",
    "红光治疗（测试）.md": "# 红光治疗\n\n## 安全性\n\n红光治疗后可能出现短暂后像，出现视力下降应立即停止治疗。\n",
}

CASES = [
    {
        "question": "低浓度阿托品有哪些副作用？",
        "docs": ["阿托品滴眼液（测试）"],
        "phrases": ["畏光"],
        "answerable": True,
    },
    {
        "question": "哪些孩子不适合验配角膜塑形镜？",
        "docs": ["角膜塑形镜护理（测试）"],
        "phrases": ["不宜验配"],
        "answerable": True,
    },
    {
        "question": "那它怎么护理？",
        "history": ["角膜塑形镜有哪些禁忌证？"],
        "docs": ["角膜塑形镜护理（测试）"],
        "phrases": ["护理液"],
        "answerable": True,
        "topic": ["角膜塑形镜"],
    },
    {"question": "青光眼的激光治疗方式有哪些？", "docs": [], "phrases": [], "answerable": False},
]


@pytest.mark.slow
def test_eval_answers_scores_a_tiny_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES, ensure_ascii=False), encoding="utf-8")
    env = {**os.environ, "EMBEDDING_MODEL": "/nonexistent/model"}  # what a new user has: BM25-only, offline
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "eval_answers.py"), "--docs", str(docs), "--cases", str(cases), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)  # stdout holds exactly one JSON object
    assert payload["info"]["mode"] == "offline" and payload["info"]["search"] == "bm25"
    assert (payload["cases"], payload["answerable"], payload["unanswerable"], payload["follow_ups"]) == (4, 3, 1, 1)
    assert payload["answer_hit"] == 1.0 and payload["evidence_precision"] == 1.0
    assert payload["citation_verified"] == 1.0
    assert payload["abstention_accuracy"] == 1.0 and payload["false_abstention"] == 0.0
    assert payload["follow_up_resolution"] == 1.0
    unanswerable = next(r for r in payload["rows"] if not r["answerable"])
    assert unanswerable["coverage"] == "no_evidence" and unanswerable["citations"] == 0


@pytest.mark.slow
def test_a_bad_cases_file_is_refused_with_its_reason(tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([{"question": "阿托品的副作用？", "answerable": True}]), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "eval_answers.py"), "--cases", str(cases)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "缺少 docs 或 phrases" in out.stderr


def test_a_follow_up_on_the_fast_path_is_resolved_by_the_question_it_searched():
    """The fast path searches the question itself (q0, with the subject a follow-up carries) and nothing else: a
    follow-up answered there is resolved when q0 names the topic, whichever script the case writes it in."""
    sys.path.insert(0, str(ROOT / "bench"))
    from eval_answers import score_case

    from clincite.core.shapes import Citation, QueryResult, SubQuery, SubQueryAnalysis

    case = {
        "question": "那长到多大会影响视力？",
        "history": ["翼状胬肉是怎么回事？"],
        "docs": ["翼状胬肉（测试）"],
        "phrases": [["胬肉過大"]],
        "answerable": True,
        "topic": [["翼狀胬肉"]],
    }
    searched = SubQuery(id="q0", text="翼状胬肉 长到 多大 影响 视力")
    answer = "**TL;DR：** 胬肉過大（>3mm）而影響視功能【1】"
    quoted = Citation(number=1, source="翼状胬肉（测试）.md", quote="胬肉過大（>3mm）而影響視功能", verified=True)
    result = QueryResult(
        question=case["question"],
        mode="offline",
        sub_queries=[],
        analyses=[SubQueryAnalysis(sub_query=searched, sub_answer="", extracts=[], confidence="high")],
        sufficiency=None,
        stage2_queries=[],
        answer=answer,
        citations=[quoted],
        timings={},
        usage={},
    )
    row = score_case(case, result)
    assert row["answer_hit"] and row["resolved"]
    wrong = result.model_copy(
        update={"analyses": [result.analyses[0].model_copy(update={"sub_query": SubQuery(id="q0", text="视力")})]}
    )
    assert not score_case(case, wrong)["resolved"]


def test_a_phrase_with_pinyin_notes_matches_the_answer_quoted_without_them():
    """A case written from a re-posted page keeps its pinyin notes ("穩(wěn)定"); ingest takes them out of the
    quote, and the evaluation reads both as the same words, as a clinician would."""
    sys.path.insert(0, str(ROOT / "bench"))
    from eval_answers import contains

    assert contains("多數患者完全穩定約需1個月。【1】", [["完全穩(wěn)定約需1個月"]])
    assert not contains("多數患者完全穩定約需3個月。【1】", [["完全穩(wěn)定約需1個月"]])
