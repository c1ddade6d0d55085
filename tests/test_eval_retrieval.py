"""bench/eval_retrieval.py end to end, in-process through its main(argv): a tiny docs folder, three easy questions."""

from __future__ import annotations

import importlib.util
import json

from conftest import ROOT

DOCS = {
    "阿托品滴眼液（测试）.md": (
        "# 阿托品滴眼液\n\n## 用法\n\n低浓度阿托品滴眼液每晚睡前滴一次，每次一滴，常用浓度为0.01%。"
        "用药期间每三个月复查屈光度和眼轴长度。\n\n## 副作用\n\n常见副作用是畏光和近距离视物模糊，"
        "多数儿童可以耐受，必要时配戴变色眼镜减轻畏光。\n"
    ),
    "角膜塑形镜护理（测试）.md": (
        "# 角膜塑形镜护理\n\n## 清洁\n\n角膜塑形镜每天摘镜后用专用护理液揉搓清洗，镜盒每周更换护理液并晾干。"
        "禁止用自来水冲洗镜片，以免棘阿米巴角膜炎。\n\n## 更换周期\n\n镜片一般使用一年到一年半后更换。\n"
    ),
    "户外活动（测试）.md": (
        "# 户外活动\n\n儿童每天户外活动两小时可以减少近视的发生。户外的光照强度远高于室内，"
        "能促进视网膜多巴胺释放，从而延缓眼轴增长。课间十分钟也应走出教室。\n"
    ),
}

CASES = [
    {"question": "低浓度阿托品有什么副作用", "docs": ["阿托品滴眼液（测试）"], "phrases": ["畏光|视物模糊"]},
    {"question": "角膜塑形镜怎么清洗", "docs": ["角膜塑形镜护理（测试）"], "phrases": ["护理液"]},
    {"question": "户外活动每天多长时间能预防近视", "docs": ["户外活动（测试）"], "phrases": ["两小时"]},
]


def test_eval_retrieval_json_on_a_tiny_docs_folder(tmp_path, run_cli):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES, ensure_ascii=False), encoding="utf-8")

    spec = importlib.util.spec_from_file_location("eval_retrieval", ROOT / "bench" / "eval_retrieval.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = run_cli(script.main, ["--docs", docs, "--cases", cases, "--json"])
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)  # stdout holds exactly one JSON object
    assert set(payload) == {"bm25", "semantic", "hybrid"}
    for mode, row in payload.items():
        assert set(row) == {"recall@5", "mrr@10", "phrase_hit@5", "questions"}, mode
        assert row["questions"] == 3
        for key in ("recall@5", "mrr@10", "phrase_hit@5"):
            assert row[key] is not None and 0.0 <= row[key] <= 1.0, (mode, key, row[key])
    assert payload["bm25"]["recall@5"] == 1.0
    assert payload["bm25"]["mrr@10"] == 1.0
    assert payload["bm25"]["phrase_hit@5"] == 1.0
    assert payload["hybrid"]["recall@5"] == 1.0  # hybrid keeps BM25's hits (3 documents, at most 6 hits)
