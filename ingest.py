"""Ingest documents into a ClinCite knowledge base (the program; the code is `clincite/cli/ingest.py`).

python ingest.py sample_kb/                  # Markdown, text, PDF, DOCX, HTML; folders are walked
python ingest.py ~/guidelines --kb ./kb --prune            # --dry-run: list what would be removed
"""

import sys

from clincite.cli.ingest import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
