"""Ingest documents into a ClinCite knowledge base.

    python ingest.py sample_kb/                  # Markdown, text, PDF, DOCX, HTML; folders are walked
    python ingest.py ~/guidelines --kb ./kb --prune            # --dry-run: list what would be removed

One line per file (added / updated / unchanged / skipped: reason) and a summary; exit 0 unless nothing could be
ingested (or another ingest holds the KB's writer lock). The work is done by `clincite.ingest.pipeline.Ingestor`;
this module is the command line (`python ingest.py`). `--prune` refuses when a folder given is missing or when it
would remove more than INGEST_PRUNE_MAX_FRACTION of the documents (an unmounted share looks like deleted
files) unless `--force`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clincite.core.logs import quiet_libraries
from clincite.core.settings import get_settings
from clincite.ingest.pipeline import Ingestor, format_result, format_summary
from clincite.kb.store import IngestBusy, KnowledgeBase


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="把文档导入 ClinCite 知识库 (ingest documents into a knowledge base)")
    parser.add_argument("paths", nargs="+", type=Path, help="files or folders (md, txt, pdf, docx, html)")
    parser.add_argument("--kb", type=Path, default=None, help="knowledge-base directory (default: KB_DIR)")
    parser.add_argument("--prune", action="store_true", help="remove documents whose files are gone")
    parser.add_argument("--force", action="store_true", help="let --prune remove more than the safety limit")
    parser.add_argument("--dry-run", action="store_true", help="with --prune: list removals, remove nothing")
    args = parser.parse_args(argv)
    quiet_libraries()

    settings = get_settings()
    kb = KnowledgeBase(settings, args.kb)
    try:
        report = Ingestor(settings, kb).run(
            args.paths,
            prune=args.prune,
            force=args.force,
            dry_run=args.dry_run,
            on_result=lambda r: print(format_result(r), flush=True),
        )
    except IngestBusy as exc:
        print(str(exc), file=sys.stderr)
        kb.close()
        return 1
    if report.prune_refused:
        print(report.prune_refused, file=sys.stderr)
    if report.embedding_warning:
        print(f"警告：{report.embedding_warning}", file=sys.stderr)
    print(format_summary(report))
    kb.close()
    return 1 if report.failed_all else 0


if __name__ == "__main__":
    sys.exit(main())
