"""Dependent sub-queries: one that needs another's answer first ("角膜塑形镜最常见的严重并发症" → "[答案]的处理原则")
waits for its parent's judged sub-answer and is rewritten with the bridge entity before it is searched.

    bridge = bridge_entity(parent_analysis, question)      # "微生物性角膜炎", or None
    rewritten = rewrite(sub_query, bridge)                 # "微生物性角膜炎的处理原则"

The bridge is a domain term of the ophthalmology lexicon (user dictionary and synonym groups) in the parent's verbatim
extracts that neither the parent sub-query nor the question named (what the parent found out: not an aspect word,
not the document's own name), from the judge's best extract first — the one its sub-answer names, else the first.
It is always a term of the evidence, never one a model made up.
"""

from __future__ import annotations

from clincite.core.shapes import BRIDGE_SLOT, SubQuery, SubQueryAnalysis
from clincite.offline.lexicon import get_lexicon
from clincite.question.gist import canonical
from clincite.text.tokenizer import get_tokenizer

LONGEST_TERM = 4  # jieba words joined to find a lexicon term (重复 + 低强度 + 红光)


def domain_terms(text: str) -> list[str]:
    """The lexicon's domain terms in the text, in order, as written (longest match first)."""
    lex = get_lexicon()
    words = [w for w in get_tokenizer().words(text) if w.strip()]
    found, i = [], 0
    while i < len(words):
        for j in range(min(len(words), i + LONGEST_TERM), i, -1):
            joined = "".join(words[i:j])
            if joined.lower() in lex.entities:
                found.append(joined)
                i = j
                break
        else:
            i += 1
    return found


def bridge_entity(parent: SubQueryAnalysis, question: str) -> str | None:
    """The term the parent's evidence answers with; None when it kept no evidence or names nothing new."""
    if not parent.extracts:
        return None
    lex = get_lexicon()
    known = {canonical(t) for t in domain_terms(parent.sub_query.text) + domain_terms(question)}

    def new(term: str) -> bool:
        return (
            canonical(term) not in known
            and term not in lex.not_subjects
            and term.lower() not in lex.generic
            and term not in lex.ask_cues
            and term not in lex.passage_cues
        )

    for extract in parent.extracts:  # the judge's best evidence first
        terms = [t for t in domain_terms(extract.text) if new(t) and t not in extract.source]
        if terms:
            named = [t for t in terms if t in parent.sub_answer]  # the judge's own summary names it: its choice
            return (named or terms)[0]
    return None


def rewrite(sub_query: SubQuery, bridge: str | None) -> SubQuery:
    """The sub-query with the bridge in its slot (or in front, if the model wrote no slot); without a bridge, the
    sub-query without its slot."""
    text = sub_query.text
    if bridge:
        text = text.replace(BRIDGE_SLOT, bridge) if BRIDGE_SLOT in text else f"{bridge} {text}"
    else:
        text = text.replace(BRIDGE_SLOT, "").strip()
    return sub_query.model_copy(update={"text": " ".join(text.split())})
