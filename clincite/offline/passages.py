"""Which sentences of the retrieved passages answer what was asked: the offline relevance judge, on typed hits.

A passage is split into its sections (Markdown headings inside a chunk start new ones), each with its own heading
path. A section passes the relevance floor for an `Ask` when it covers the question's terms (in the document title,
the heading path or the section text) and, if aspects were asked, names the aspect: in its deepest heading that names
any aspect (a paragraph under "禁忌证" answers a 禁忌证 question even if the word is absent), or, when its heading
names none, in a sentence. A section whose heading names another aspect (适应证) never answers this one. Every
extract is a verbatim run of sentences of the section; a sentence that repeats a question term three times or more
is treated as keyword stuffing and skipped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from clincite.core.shapes import Hit
from clincite.offline.lexicon import Lexicon, get_lexicon
from clincite.offline.questions import Ask

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]?")
_FIGURE = re.compile(r"\d")
PRONOUN_START = ("它", "其", "这", "该", "此", "上述")
LEAD_CHARS = 220  # a section matched by its heading contributes its opening sentences, up to about this many
STUFFING_REPEATS = 3
MIN_SENTENCE = 8
HEADING_MATCH = 4.5  # above any sentence-level match (at most 1.5 + 1.5 topical + 1 term share)


@dataclass
class Section:
    hit: Hit
    rank: int  # the hit's place in the search results
    path: list[str]
    text: str


@dataclass
class Candidate:
    score: float
    section: Section
    text: str  # verbatim, a run of sentences of the section
    aspect: str  # the aspect it answers ("" for a question without one)
    by_heading: bool  # the section's heading, not just a sentence, matched
    about: bool = False  # the question's subject is in the document title or the heading path (not only mentioned)


def sections(hit: Hit, rank: int = 0) -> list[Section]:
    """The hit's text cut at its Markdown headings; heading levels below the document title extend the path."""
    out, path, lines, start_path = [], list(hit.heading_path), [], list(hit.heading_path)
    # PDF and DOCX passages carry their headings as plain lines ("三、高度近视的随访"): a heading, not evidence.
    plain_headings = {h.strip() for h in hit.heading_path}
    for line in hit.text.splitlines(keepends=True):
        if line.strip() in plain_headings and not "".join(lines).strip():
            continue
        match = _HEADING.match(line.strip())
        if match:
            if "".join(lines).strip():
                out.append(Section(hit, rank, start_path, "".join(lines).strip()))
            level = len(match.group(1))
            path = [*hit.heading_path[: max(level - 2, 0)], match.group(2)] if level > 1 else []
            start_path, lines = path, []
            continue
        lines.append(line)
    if "".join(lines).strip():
        out.append(Section(hit, rank, start_path, "".join(lines).strip()))
    return out


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if len(s.strip()) >= MIN_SENTENCE]


def mentions(text: str, term: str, lex: Lexicon) -> bool:
    lowered = text.lower()
    return any(v in lowered for v in lex.variants(term))


def covers_terms(ask: Ask, section: Section, lex: Lexicon) -> bool:
    """Every domain term, and most of the other terms, appear in the title, headings or text of the section."""
    scope = " ".join([section.hit.title, *section.path, section.text])
    headings = " ".join([section.hit.title, *section.path])
    if not all(mentions(scope, term, lex) or _broader_in(headings, term, lex) for term in ask.entities):
        return False
    others = [t for t in ask.terms if t not in ask.entities]
    needed = len(others) if len(others) <= 2 else math.ceil(len(others) / 2)
    return sum(mentions(scope, term, lex) for term in others) >= needed


def _broader_in(headings: str, term: str, lex: Lexicon) -> bool:
    """A document or section about the broader subject covers the narrower term: 低浓度阿托品 in 《阿托品滴眼液》."""
    lowered = term.lower()
    return any(
        len(broader) >= 2 and broader != lowered and broader in lowered and mentions(headings, broader, lex)
        for broader in _sub_entities(lowered, lex)
    )


def _sub_entities(term: str, lex: Lexicon) -> list[str]:
    return [
        term[i:j]
        for i in range(len(term))
        for j in range(i + 2, len(term) + 1)
        if (i, j) != (0, len(term)) and term[i:j] in lex.entities
    ]


def heading_aspects(section: Section, lex: Lexicon) -> tuple[set[str], set[str]]:
    """(own, inherited): the aspects the section's own heading names (适应证与禁忌证 > 禁忌证 → {禁忌证}), and the one
    aspect of the nearest parent heading that names exactly one (设计原理与主要类型 > DIMS → {作用机制}). A parent that
    lists several (用法、禁忌与随访 > 与角膜塑形镜联合) says nothing about this subsection."""
    if not section.path:
        return set(), set()
    own = lex.passage_aspects(section.path[-1])
    for heading in reversed(section.path[:-1]):
        found = lex.passage_aspects(heading)
        if found:
            return own, found if len(found) == 1 else set()
    return own, set()


def candidates(ask: Ask, hits: list[Hit], lex: Lexicon | None = None) -> list[Candidate]:
    """Every extract above the relevance floor, best first."""
    lex = lex or get_lexicon()
    found: list[Candidate] = []
    for rank, hit in enumerate(hits):
        for section in sections(hit, rank):
            if covers_terms(ask, section, lex):
                found += _section_candidates(ask, section, lex)
    return sorted(found, key=lambda c: -c.score)


def _section_candidates(ask: Ask, section: Section, lex: Lexicon) -> list[Candidate]:
    own, inherited = heading_aspects(section, lex)
    prior = 0.3 / (1 + section.rank)
    path = " ".join(section.path)
    # Terms in the headings say more about a section than terms in the document title.
    topical = sum(mentions(path, t, lex) + 0.5 * mentions(section.hit.title, t, lex) for t in ask.terms) / max(
        len(ask.terms), 1
    )
    out: list[Candidate] = []
    for aspect in ask.aspects or [""]:
        if not aspect:
            out += _general(ask, section, lex, topical + prior)
        elif aspect in own | inherited:
            text = _best_of_section(section.text, aspect, ask, lex)
            out.append(Candidate(HEADING_MATCH + topical + prior, section, text, aspect, True))
        elif not own:  # a heading naming another aspect (适应证) never answers this one; no aspect: its sentences may
            for sentence in _sentences_naming(section.text, aspect, ask, lex):
                out.append(
                    Candidate(1.5 + topical + _term_share(sentence, ask, lex) + prior, section, sentence, aspect, False)
                )
    about = mentions(" ".join([section.hit.title, path]), ask.subject, lex)
    for candidate in out:
        candidate.about = about
    return [c for c in out if c.text]


def _general(ask: Ask, section: Section, lex: Lexicon, base: float) -> list[Candidate]:
    """A question without an aspect: the sentences with the most of its specific terms."""
    specific = [t for t in ask.terms if t not in ask.entities] or ask.terms
    heading = " ".join(section.path)
    if any(mentions(heading, t, lex) for t in specific):
        return [Candidate(3.5 + base, section, _lead(section.text, ask, lex), "", True)]
    out = []
    for i, sentence in enumerate(sentences(section.text)):
        share = sum(mentions(sentence, t, lex) for t in specific) / len(specific)
        if share and not _stuffed(sentence, ask, lex):
            out.append(Candidate(1 + 2 * share + base, section, _with_antecedent(section.text, i), "", False))
    return out


def _best_of_section(text: str, aspect: str, ask: Ask, lex: Lexicon) -> str:
    """The section's opening, or a run of its sentences that names the aspect (适用人群与禁忌: the 禁忌 sentence;
    LAMP研究: "0.05%效果最好…"), whichever says more: question terms, the aspect, figures. The opening wins ties."""
    options = [_lead(text, ask, lex), *_sentences_naming(text, aspect, ask, lex)]

    def says(option: str) -> float:
        return (
            sum(mentions(option, t, lex) for t in ask.terms)
            + (aspect in lex.passage_aspects(option))
            + 0.5 * bool(_FIGURE.search(option))
        )

    return max((o for o in options if o), key=says, default="")


def _sentences_naming(text: str, aspect: str, ask: Ask, lex: Lexicon) -> list[str]:
    """Sentences that name the aspect; neighbours that both name it form one run (危险因素。…风险约为3至5倍。)."""
    found: list[str] = []
    previous = -2
    all_sentences = sentences(text)
    for i, sentence in enumerate(all_sentences):
        if aspect not in lex.passage_aspects(sentence) or _stuffed(sentence, ask, lex):
            continue
        joined = f"{found[-1]}{sentence}" if found and previous == i - 1 else ""
        if joined and joined in text:
            found[-1] = joined
        else:
            found.append(_with_antecedent(text, i))
        previous = i
    return found


def _lead(text: str, ask: Ask, lex: Lexicon) -> str:
    """The section's opening sentences (a contiguous, verbatim run), skipping keyword-stuffed ones."""
    run = ""
    for sentence in sentences(text):
        if _stuffed(sentence, ask, lex):
            break
        if run and len(run) + len(sentence) > LEAD_CHARS:
            break
        candidate = f"{run}{sentence}" if run else sentence
        if candidate not in text:  # only whole, contiguous sentences: they must stay verbatim
            break
        run = candidate
    return run


def _with_antecedent(text: str, index: int) -> str:
    """A sentence that opens with 它/其/这… is shown with the sentence before it, so the pronoun is resolved."""
    all_sentences = sentences(text)
    sentence = all_sentences[index]
    if index > 0 and sentence.startswith(PRONOUN_START):
        joined = all_sentences[index - 1] + sentence
        if joined in text:
            return joined
    return sentence


def _term_share(sentence: str, ask: Ask, lex: Lexicon) -> float:
    return sum(mentions(sentence, t, lex) for t in ask.terms) / max(len(ask.terms), 1)


def _stuffed(sentence: str, ask: Ask, lex: Lexicon) -> bool:
    lowered = sentence.lower()
    return any(lowered.count(v) >= STUFFING_REPEATS for t in ask.terms for v in lex.variants(t)[:1])
