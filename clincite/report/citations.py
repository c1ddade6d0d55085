"""Reading a report's citations back and checking them (the format itself: `clincite.report.format`).

`parse_citations` reads the evidence items back; `verify_citations` looks every quote up in the chunks of the source
it names, after normalising whitespace, full/half-width punctuation and Markdown emphasis. A quote that is not found
stays in the report but carries `verified=False`, and every renderer flags it.
"""

from __future__ import annotations

import re
import unicodedata

from clincite.core.naming import source_names, strip_source_name
from clincite.core.shapes import Chunk, Citation

_ITEM = re.compile(r"\*\*\s*【(\d+)】\s*(.*?)\s*\*\*", re.S)
_SOURCE = re.compile(r"《([^》\n]+)》")
_QUOTE = re.compile(r"原文\s*[：:]\s*[“\"「『](.+)[”\"」』]", re.S)
_QUOTE_FALLBACK = re.compile(r"[“「『](.+?)[”」』]", re.S)
_MARKUP = re.compile(r"[*_`#>\s]")
# Characters that differ between full- and half-width forms or between quote styles, mapped to one form.
_EQUIVALENT = str.maketrans(
    {
        "“": '"',
        "”": '"',
        "‘": "'",
        "’": "'",
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "。": ".",
        "、": ",",
        "〜": "~",
        "—": "-",
        "–": "-",
        "－": "-",
        # The look-alikes data text is given in prompts (llm/prompts.defuse): a quote copied from there still matches.
        "〔": "【",
        "〕": "】",
        "〈": "《",
        "〉": "》",
    }
)


def normalise(text: str) -> str:
    """Comparable form: NFKC (full-width → half-width), one quote style, no whitespace or Markdown emphasis."""
    text = unicodedata.normalize("NFKC", text).translate(_EQUIVALENT)
    return _MARKUP.sub("", text).lower()


def parse_citations(answer: str) -> list[Citation]:
    """Evidence items of a report, in order; items without a source or a quote are left out."""
    items = list(_ITEM.finditer(answer))
    citations: list[Citation] = []
    for index, match in enumerate(items):
        block_end = items[index + 1].start() if index + 1 < len(items) else len(answer)
        block = answer[match.end() : block_end]
        source = _SOURCE.search(block)
        quote = _QUOTE.search(block) or _QUOTE_FALLBACK.search(block)
        if not source or not quote:
            continue
        # The whole quote, every paragraph of it: a quote checked by its first line only would let lines after it
        # pass as verified whatever they say
        quote_text = quote.group(1).strip().rstrip('”"」』').strip()
        citations.append(
            Citation(
                number=int(match.group(1)),
                title=match.group(2).strip(),
                source=source.group(1).strip(),
                quote=quote_text,
                verified=False,
            )
        )
    return citations


def find_quote(quote: str, chunks: list[Chunk]) -> Chunk | None:
    """The chunk whose text contains the quote (normalised), or None."""
    needle = normalise(quote)
    if not needle:
        return None
    for chunk in chunks:
        if needle in normalise(chunk.text):
            return chunk
    return None


def verify_citations(citations: list[Citation], chunks_by_source: dict[str, list[Chunk]]) -> list[Citation]:
    """Mark each citation verified when its quote is found in a chunk of the source it names.

    A document's file name is its own: a document cited by its title (a slug- or identifier-named file) never takes
    the name of another document's file — a file titled like the clinic's guideline cannot make its words a verified
    citation of the guideline. Documents that share a title are all looked in (the panel then names the file)."""
    by_name: dict[str, list[Chunk]] = {strip_source_name(source): chunks for source, chunks in chunks_by_source.items()}
    titled: dict[str, list[Chunk]] = {}
    for source, chunks in chunks_by_source.items():
        for name in source_names(source, chunks[0].title if chunks else None) - by_name.keys():
            titled.setdefault(name, []).extend(chunks)
    by_name.update(titled)
    checked = []
    for citation in citations:
        chunk = find_quote(citation.quote, by_name.get(strip_source_name(citation.source), []))
        checked.append(
            citation.model_copy(
                update={
                    "verified": chunk is not None,
                    "chunk_id": chunk.id if chunk else None,
                    "heading_path": chunk.heading_path if chunk else [],
                    "pages": chunk.pages if chunk else None,
                }
            )
        )
    return checked


def snap_to_chunk(extract: str, chunk: Chunk, min_overlap: float = 0.6) -> str | None:
    """An extract as it stands in the chunk: itself if verbatim, else the chunk's sentence run that overlaps it most.

    LLM judges sometimes drop a character or change punctuation; snapping keeps extracts verbatim before the answer
    generator ever sees them. Returns None when nothing in the chunk is close enough.
    """
    if normalise(extract) in normalise(chunk.text):
        return extract
    sentences = [s for s in re.split(r"(?<=[。！？；!?;\n])", chunk.text) if s.strip()]
    target = _bigrams(extract)
    if not target:
        return None
    best, best_score = None, 0.0
    for i in range(len(sentences)):
        run = ""
        for j in range(i, min(i + 4, len(sentences))):
            run += sentences[j]
            grams = _bigrams(run)
            score = len(target & grams) / max(len(target | grams), 1)
            if score > best_score:
                best, best_score = run.strip(), score
    return best if best_score >= min_overlap else None


def _bigrams(text: str) -> set[str]:
    text = normalise(text)
    return {text[i : i + 2] for i in range(len(text) - 1)}


UNVERIFIED_LABEL = "原文（⚠️ 未能在来源中逐字核验）："


def mark_unverified(answer: str, citations: list[Citation]) -> str:
    """Label the quote line of every unverified evidence item, so no renderer can show it as checked."""
    unverified = {c.number for c in citations if not c.verified}
    if not unverified:
        return answer
    items = list(_ITEM.finditer(answer))
    parts, last = [], 0
    for index, match in enumerate(items):
        end = items[index + 1].start() if index + 1 < len(items) else len(answer)
        if int(match.group(1)) in unverified:
            block = answer[match.start() : end]
            parts.append(answer[last : match.start()])
            parts.append(re.sub(r"原文\s*[：:]", UNVERIFIED_LABEL, block, count=1))
            last = end
    parts.append(answer[last:])
    return "".join(parts)
