"""Ask the knowledge base from the command line (the program; the code is `clincite/cli/query.py`).

    python query.py "低浓度阿托品控制近视的效果和副作用？"          # steps + streamed report in the terminal
    python query.py "…" --json                                     # one JSON object (docs/architecture.md §4)
    python query.py "…" --retrieve --json                          # retrieval only, no LLM

`TwoStageQueryService` (`clincite/question/service.py`) is re-exported here for scripts that import it from `query`.
"""

import sys

from clincite.cli.query import OFFLINE_BANNER, TwoStageQueryService, main

__all__ = ["OFFLINE_BANNER", "TwoStageQueryService", "main"]

if __name__ == "__main__":
    sys.exit(main())
