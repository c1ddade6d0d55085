"""The query command line: the second renderer of the service's event stream (`python query.py`).

    python query.py "低浓度阿托品控制近视的效果和副作用？"          # steps + streamed report in the terminal
    python query.py "…" --json                                     # one JSON object (docs/architecture.md)
    python query.py "…" --retrieve --json                          # retrieval only, no LLM

`TwoStageQueryService` — decomposition → search and judge → sufficiency → (stage 2) → answer — lives in
`clincite/question/service.py`; the web app and this command line draw the same events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from clincite.cli.terminal import TerminalRenderer
from clincite.core.logs import quiet_libraries
from clincite.core.naming import display_source
from clincite.core.settings import get_settings
from clincite.core.shapes import AnswerDone
from clincite.core.untrusted import clean_input, has_content
from clincite.kb.store import KnowledgeBase
from clincite.question.service import OFFLINE_BANNER, TwoStageQueryService
from clincite.retrieval.search import HybridSearcher

__all__ = ["OFFLINE_BANNER", "TwoStageQueryService", "main"]
RETRIEVE_FIELDS = {"chunk_id", "source", "title", "heading_path", "pages", "text", "bm25", "semantic", "found_by"}


async def _run_cli(args: argparse.Namespace) -> int:
    settings = get_settings()
    searcher = HybridSearcher(settings, KnowledgeBase(settings, args.kb))
    if args.retrieve:
        return await _retrieve(searcher, args)
    service = TwoStageQueryService(settings, searcher)
    await service.warm_up()
    render = TerminalRenderer(sys.stderr if args.json else sys.stdout)
    result = None
    async for event in service.run(args.question):
        render(event)
        if isinstance(event, AnswerDone):
            result = event.result
    if args.json and result is not None:
        print(result.model_dump_json(indent=2))
    return 0


async def _retrieve(searcher: HybridSearcher, args: argparse.Namespace) -> int:
    hits = await searcher.search(args.question)
    payload = {
        "question": args.question,
        "search_mode": "bm25" if searcher.bm25_only else "hybrid",
        "hits": [h.model_dump(include=RETRIEVE_FIELDS) for h in hits],
    }
    if searcher.warning:
        print(searcher.warning, file=sys.stderr)
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        for h in hits:
            print(f"[{'+'.join(h.found_by)}] 《{display_source(h.source)}》 {h.text[:80]}…")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ClinCite：基于知识库的循证问答 (ask the knowledge base)")
    parser.add_argument("question", help="临床问题")
    parser.add_argument("--kb", default=None, help="knowledge-base directory (default: KB_DIR)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (docs/architecture.md, contracts)")
    parser.add_argument("--retrieve", action="store_true", help="retrieval only: print the hits, no LLM")
    args = parser.parse_args(argv)
    args.question = clean_input(args.question).strip()  # as the web door cleans it
    if not has_content(args.question):
        print("没有收到问题内容（为空或只有符号），请输入要查询的问题。", file=sys.stderr)
        return 2
    quiet_libraries()
    return asyncio.run(_run_cli(args))


if __name__ == "__main__":
    sys.exit(main())
