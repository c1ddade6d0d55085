"""Ingest documents into a ClinCite knowledge base.

    python ingest.py sample_kb/                  # Markdown, text, PDF, DOCX, HTML; folders are walked
    python ingest.py ~/guidelines --kb ./kb --prune

One line per file (added / updated / unchanged / skipped: reason) and a summary; exit 0 unless nothing could be
ingested. The work is done by `clincite.ingest.Ingestor`; this file is the command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clincite.ingest import Ingestor, format_result, format_summary
from clincite.kb import KnowledgeBase
from clincite.logs import quiet_libraries
from clincite.settings import get_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="把文档导入 ClinCite 知识库 (ingest documents into a knowledge base)")
    parser.add_argument("paths", nargs="+", type=Path, help="files or folders (md, txt, pdf, docx, html)")
    parser.add_argument("--kb", type=Path, default=None, help="knowledge-base directory (default: KB_DIR)")
    parser.add_argument("--prune", action="store_true", help="remove documents whose files are gone")
    args = parser.parse_args(argv)
    quiet_libraries()

    settings = get_settings()
    kb = KnowledgeBase(settings, args.kb)
    report = Ingestor(settings, kb).run(args.paths, prune=args.prune,
                                        on_result=lambda r: print(format_result(r), flush=True))
    if report.embedding_warning:
        print(f"警告：{report.embedding_warning}", file=sys.stderr)
    print(format_summary(report))
    kb.close()
    return 1 if report.failed_all else 0


if __name__ == "__main__":
    sys.exit(main())
