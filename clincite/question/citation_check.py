"""Citation check: every quote of a report looked up in the chunks of the source it names (off the event loop)."""

from __future__ import annotations

import asyncio

from clincite.core.naming import source_names, strip_source_name
from clincite.core.shapes import Chunk, Citation
from clincite.kb.catalogue import Catalogue
from clincite.report.citations import parse_citations, verify_citations


def check_citations(answer: str, catalogue: Catalogue) -> list[Citation]:
    citations = parse_citations(answer)
    if not citations:
        return []
    named = {strip_source_name(c.source) for c in citations}
    chunks: dict[str, list[Chunk]] = {
        source: catalogue.chunks_of(source)
        for source, record in catalogue.documents().items()
        if source_names(source, record.title) & named
    }
    return verify_citations(citations, chunks)


async def check_citations_async(answer: str, catalogue: Catalogue) -> list[Citation]:
    """A quote that is not found is compared against every chunk of its document: seconds on a large one."""
    return await asyncio.to_thread(check_citations, answer, catalogue)
