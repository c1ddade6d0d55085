"""The offline answerer's vocabulary: aspects of a clinical question (`lexicon/aspects.json`) and the domain terms.

lex = get_lexicon()
lex.ask_cues["不适合"]                 # → "禁忌证"
lex.passage_aspects("以下情况不宜验配")   # → {"禁忌证"}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from clincite.text.tokenizer import LEXICON_DIR, get_tokenizer


@dataclass
class Lexicon:
    ask_cues: dict[str, str]  # question word → aspect
    passage_cues: dict[str, str]  # heading / sentence word → aspect
    ignore: list[str]
    generic: set[str]
    follow_up: list[str]
    demonstratives: set[str]
    not_subjects: set[str]
    entities: set[str] = field(default_factory=set)  # domain terms: synonym groups and the user dictionary
    synonym_groups: list[list[str]] = field(default_factory=list)

    @property
    def aspects(self) -> list[str]:
        return list(dict.fromkeys(self.ask_cues.values()))

    def passage_aspects(self, text: str) -> set[str]:
        """The aspects a heading or sentence names, longest cue first (不适合 is 禁忌证, not 适应证)."""
        found: set[str] = set()
        taken = [False] * len(text)
        for cue in sorted(self.passage_cues, key=len, reverse=True):
            start = text.find(cue)
            while start >= 0:
                if not any(taken[start : start + len(cue)]):
                    found.add(self.passage_cues[cue])
                    taken[start : start + len(cue)] = [True] * len(cue)
                start = text.find(cue, start + 1)
        return found

    def variants(self, term: str) -> list[str]:
        """The term and its synonyms (OK镜 → 角膜塑形镜 …), lower-cased."""
        lowered = term.lower()
        out = [lowered]
        for group in self.synonym_groups:
            if any(lowered == t.lower() for t in group):
                out += [t.lower() for t in group if t.lower() not in out]
        return out


def load_lexicon(lexicon_dir: Path = LEXICON_DIR) -> Lexicon:
    raw = json.loads((lexicon_dir / "aspects.json").read_text(encoding="utf-8"))
    ask, passage = {}, {}
    for aspect, cues in raw["aspects"].items():
        ask.update(dict.fromkeys(cues["ask"], aspect))
        passage.update(dict.fromkeys(cues["passage"], aspect))
    tokenizer = get_tokenizer()
    entities = {t.lower() for group in tokenizer.synonyms for t in group}
    userdict = lexicon_dir / "userdict.txt"
    if userdict.exists():
        entities |= {
            line.split()[0].lower() for line in userdict.read_text(encoding="utf-8").splitlines() if line.strip()
        }
    return Lexicon(
        ask_cues=ask,
        passage_cues=passage,
        ignore=sorted(raw["ignore"], key=len, reverse=True),
        generic=set(raw["generic"]),
        follow_up=sorted(raw["follow_up"], key=len, reverse=True),
        demonstratives=set(raw["demonstratives"]),
        not_subjects=set(raw["not_subjects"]),
        entities=entities,
        synonym_groups=tokenizer.synonyms,
    )


@lru_cache(maxsize=1)
def get_lexicon() -> Lexicon:
    return load_lexicon()
