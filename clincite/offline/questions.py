"""What a question asks, as data: its topic terms, the aspects it asks about, and the topic a follow-up refers to.

ask = analyse("哪些孩子不适合验配角膜塑形镜？")
ask.terms, ask.aspects, ask.subject        # ['验配', '角膜塑形镜'], ['禁忌证'], '角膜塑形镜'
analyse("那它的感染风险怎么预防？", previous=["哪些孩子不适合验配角膜塑形镜？"]).subject   # '角膜塑形镜'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clincite.offline.lexicon import Lexicon, get_lexicon
from clincite.text.tokenizer import get_tokenizer

SHORT_QUESTION = 12  # characters: a question this short with no subject of its own continues the previous one
TRAILING = "？?。！!，, "
PARTICLES = ("呢", "吗", "吧", "啊", "呀")
_PUNCT = re.compile(r"^[\W_]+$")


@dataclass
class Ask:
    question: str  # as asked
    resolved: str  # with the previous topic in place of 它/那/其 and without question marks
    terms: list[str] = field(default_factory=list)  # every content term; a passage must cover them (see passages)
    entities: list[str] = field(default_factory=list)  # the terms that are domain terms of the lexicon
    aspects: list[str] = field(default_factory=list)
    cues: list[str] = field(default_factory=list)  # the words the question used for its aspects (复查, 不适合)
    inherited: str = ""  # the previous question's topic, for a follow-up

    @property
    def subject(self) -> str:
        """The most specific domain term (the longest), else the terms as written: what titles name."""
        if self.entities:
            return max(self.entities, key=len)
        return "".join(self.terms) or self.resolved

    @property
    def others(self) -> list[str]:
        return [t for t in self.terms if t != self.subject]

    def sub_query_texts(self) -> list[tuple[str, str]]:
        """(search text, aspect) per aspect asked, or the resolved question when it names no aspect."""
        if not self.aspects:
            return [(self.resolved, "")]
        if len(self.aspects) == 1:  # the question as asked searches best; the aspect's name is added when absent
            aspect = self.aspects[0]
            return [(self.resolved if aspect in self.resolved else f"{self.resolved} {aspect}", aspect)]
        out = []
        for aspect in self.aspects:
            # The question's own words go to the search too: the guideline may say 复查 where the aspect is 随访.
            words = [c for c in self.cues if self._aspect_of(c) == aspect and c != aspect] + self.others
            out.append((f"{self.subject}的{aspect}" + (f" {' '.join(words)}" if words else ""), aspect))
        return out

    @staticmethod
    def _aspect_of(cue: str) -> str:
        lex = get_lexicon()
        return lex.ask_cues.get(cue) or next((a for c, a in lex.ask_cues.items() if cue.endswith(c)), "")


def analyse(question: str, previous: list[str] | None = None, lexicon: Lexicon | None = None) -> Ask:
    """Analyse a question; `previous` are the earlier user questions of the chat, oldest first."""
    lex = lexicon or get_lexicon()
    text = question.strip().strip(TRAILING)
    while text.endswith(PARTICLES) and len(text) > 1:
        text = text[:-1].rstrip(TRAILING)
    cleaned = text
    for phrase in lex.ignore:
        cleaned = cleaned.replace(phrase, " ")
    tokens = _merge(_words(cleaned), lex)
    terms, cues, marker = _classify(tokens, lex)
    aspects = [lex.ask_cues.get(c) or next(a for k, a in lex.ask_cues.items() if c.endswith(k)) for c in cues]
    ask = Ask(
        question=question,
        resolved=text,
        terms=terms,
        aspects=list(dict.fromkeys(aspects)),
        cues=list(dict.fromkeys(cues)),
    )
    ask.entities = [t for t in terms if t.lower() in lex.entities]
    if previous and _continues(ask, marker, text, lex):
        before = analyse(previous[-1], previous[:-1], lex)
        ask.inherited = before.subject
        ask.terms = [before.subject, *[t for t in ask.terms if t != before.subject]]
        ask.entities = [before.subject, *[t for t in ask.entities if t != before.subject]]
        ask.resolved = before.subject + _strip_markers(text, lex)
    return ask


def _words(text: str) -> list[str]:
    return [w for w in get_tokenizer().words(text) if w.strip() and not _PUNCT.match(w)]


def _merge(words: list[str], lex: Lexicon) -> list[str]:
    """Join neighbouring words that form one lexicon term or cue (重复低强度红光 + 治疗, 不 + 适合)."""
    out, i = [], 0
    while i < len(words):
        for j in range(min(len(words), i + 4), i + 1, -1):
            joined = "".join(words[i:j])
            if joined.lower() in lex.entities or joined in lex.ask_cues:
                out.append(joined)
                i = j
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _classify(tokens: list[str], lex: Lexicon) -> tuple[list[str], list[str], bool]:
    terms, aspects, marker, skip = [], [], False, False
    for index, token in enumerate(tokens):
        if skip:
            skip = False
            continue
        if token in lex.follow_up:
            marker = True
            following = tokens[index + 1] if index + 1 < len(tokens) else ""
            # 这种治疗 / 该药: the noun after a demonstrative names the previous topic, not an aspect.
            skip = token in lex.demonstratives and bool(following) and following not in lex.generic
            continue
        if token in lex.ask_cues:
            aspects.append(token)
            continue
        cue = next((c for c in lex.ask_cues if len(c) >= 2 and token.endswith(c) and len(token) > len(c)), None)
        if cue and token.lower() not in lex.entities:  # 激光治疗 → 激光 + the aspect 治疗
            aspects.append(cue)
            token = token[: -len(cue)]
        if token in lex.generic or token in get_tokenizer().stopwords:
            continue
        terms.append(token)
    return list(dict.fromkeys(terms)), aspects, marker


def _continues(ask: Ask, marker: bool, text: str, lex: Lexicon) -> bool:
    """A follow-up: it refers back (它/那/其…), or it is short and names no subject of its own (停药后会反弹吗)."""
    if marker:
        return True
    subjects = [t for t in ask.entities if t not in lex.not_subjects]
    return not subjects and len(text) <= SHORT_QUESTION


def _strip_markers(text: str, lex: Lexicon) -> str:
    changed = True
    while changed:
        changed = False
        for word in lex.follow_up:
            if text.startswith(word):
                text, changed = text[len(word) :], True
    return text.lstrip("的")
