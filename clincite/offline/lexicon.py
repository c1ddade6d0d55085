"""The offline answerer's vocabulary (`clincite/text/lexicon/aspects.json`): aspects, question words, domain terms.

    lex = get_lexicon()
    lex.ask_cues["不适合"]                 # → "禁忌证"
    lex.passage_aspects("以下情况不宜验配")   # → {"禁忌证"}
    lex.variants("OK镜")                    # → ["ok镜", "角膜塑形镜", …]

Aspects are a boost to relevance, never a gate: the relevance of a passage rests on the search scores and on how
much of the question's rare vocabulary it covers (`clincite.offline.relevance`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from clincite.text.tokenizer import LEXICON_DIR, get_tokenizer

# a qualifier of one to four characters ending in 性/型, then the term it qualifies
_QUALIFIED_KIND = re.compile(r"[\u4e00-\u9fff]{1,4}?[性型](?P<head>[\u4e00-\u9fff]{2,})")


@dataclass
class Lexicon:
    ask_cues: dict[str, str]  # question word → aspect
    passage_cues: dict[str, str]  # heading / sentence word → aspect
    list_aspects: set[str]  # aspects whose answer is typically a list: every item matters
    free_aspects: set[str]  # aspects whose wording varies too much for a word list (为什么、是什么、怎么办)
    function_words: set[str]  # question and framing words: never a search term, never a relevance test
    generic: set[str]  # words that never identify a topic (weighed low)
    quantity_words: set[str]  # the question asks for a number
    quantities: dict[str, tuple[list[str], list[str]]]  # kind → (words asking for it, units an answer carries)
    quantity_search: dict[str, list[str]]  # kind → the words a text gives it by (年龄: 年龄、岁), for the search
    quantity_answers: dict[str, list[str]]  # kind → words that answer it without a number (多久: 终生、长期)
    joiners: set[str]  # "A和B": the words that join two subjects
    split_words: set[str]  # "A和B分别…": each subject asked about on its own
    follow_up: list[str]
    demonstratives: set[str]
    not_subjects: set[str]
    populations: set[str]  # who a question is asked of (儿童、孕妇)
    age_groups: set[str] = field(default_factory=set)  # people named by age (儿童、老人): an age said speaks of them
    age_words: set[str] = field(default_factory=set)  # the words for an age (年龄、岁数): a question naming one asks it
    medical_suffixes: tuple[str, ...] = ()  # the heads medical terms end in (…病、…术、…药)
    entities: set[str] = field(default_factory=set)  # domain terms: synonym groups and the user dictionary
    synonym_groups: list[list[str]] = field(default_factory=list)
    kinds: dict[str, list[str]] = field(default_factory=dict)  # member → its class's names (吗啡 → 阿片类药物 …)
    members: dict[str, list[str]] = field(default_factory=dict)  # a class name → its members (散瞳药 → 托吡卡胺 …)
    # an aspect → the aspects whose cues also speak to it: "治什么的" (用途) is answered by a label's indication
    answered_by: dict[str, set[str]] = field(default_factory=dict)
    # a sign told in everyday words → its name (一到晚上就看不清 → 夜盲症): descriptions.json
    descriptions: list[tuple[re.Pattern, str]] = field(default_factory=list)
    _cues_by_length: list[str] = field(default_factory=list)
    _by_head: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._cues_by_length = sorted(self.passage_cues, key=len, reverse=True)

    def is_entity(self, word: str) -> bool:
        """A domain term, or a kind of one a qualifier names (原发性视网膜脱离, 老年性白内障: X性/X型 and a domain
        term), which a general dictionary may hold but the lexicon need not list."""
        lowered = word.lower()
        if lowered in self.entities:
            return True
        qualified = _QUALIFIED_KIND.fullmatch(lowered)
        return bool(qualified) and qualified.group("head") in self.entities

    def entities_ending(self, head: str) -> list[str]:
        """The domain terms that are kinds of `head` (细菌性结膜炎、过敏性结膜炎 of 结膜炎)."""
        if head not in self._by_head:
            self._by_head[head] = [e for e in self.entities if len(e) > len(head) and e.endswith(head)]
        return self._by_head[head]

    @property
    def aspects(self) -> list[str]:
        return list(dict.fromkeys(self.ask_cues.values()))

    def passage_aspects(self, text: str) -> set[str]:
        """The aspects a heading or sentence names, longest cue first (不适合 is 禁忌证, not 适应证)."""
        named = {self.passage_cues[cue] for cue in self.passage_cues_in(text)}
        return named | {aspect for aspect, others in self.answered_by.items() if others & named}

    def passage_cues_in(self, text: str) -> set[str]:
        """The aspect cues a heading or sentence has, longest first (不适合, not 适合 within it)."""
        found: set[str] = set()
        taken = [False] * len(text)
        for cue in self._cues_by_length:
            start = text.find(cue)
            while start >= 0:
                if not any(taken[start : start + len(cue)]) and not _asks_either(text, start, cue):
                    found.add(cue)
                    taken[start : start + len(cue)] = [True] * len(cue)
                start = text.find(cue, start + 1)
        return found

    def quantity_asked(self, question: str) -> str:
        """The kind of number a question asks for (时间、剂量、年龄 …), "number" for a bare 多少/几, else ""."""
        question = SEVERAL.sub("余", question)  # "糖尿病十几年" tells how long; it does not ask
        question = HEDGES.sub("", question)  # "概率大概有多高" asks what "概率有多高" asks
        found = [
            (len(word), kind) for kind, (words, _) in self.quantities.items() for word in words if word in question
        ]
        return max(found)[1] if found else ""

    def aspect_of(self, cue: str) -> str:
        """The aspect a question word asks for ("" when none): exact, else by its ending (激光治疗 → 治疗)."""
        return self.ask_cues.get(cue) or next(
            (a for c, a in self.ask_cues.items() if len(c) >= 2 and cue.endswith(c)), ""
        )

    def is_medical(self, word: str) -> bool:
        """Medical wording: a domain term, a word of THUOCL's medical lexicon (环孢素、疫苗), or a longer word ending in
        a medical head (眼药膏、降压药、后巩膜加固术) — not the asker's everyday nouns (工友、书本、台灯)."""
        lowered = word.lower()
        if lowered in self.entities or get_tokenizer().is_medical(word):
            return True
        return any(len(lowered) > len(s) and lowered.endswith(s) for s in self.medical_suffixes)

    def is_medical_wording(self, word: str) -> bool:
        """A longer word ending in a medical head (红眼病、干眼症、结膜炎): a disease or treatment named as such."""
        return any(len(word) > len(s) and word.endswith(s) for s in self.medical_suffixes)

    def variants(self, term: str) -> list[str]:
        """The term and its synonyms (OK镜 → 角膜塑形镜 …), lower-cased, the term first."""
        lowered = term.lower()
        out = [lowered]
        for group in self.synonym_groups:
            if any(lowered == t.lower() for t in group):
                out += [t.lower() for t in group if t.lower() not in out]
        derived = [
            *in_digits(lowered),
            *other_writings(lowered),
            *self._condition_of(lowered),
            *_disease_of(lowered),
            *self._patients_of(lowered),
            *self._of_members(lowered),
        ]
        return out + [v for v in derived if v not in out]

    def _of_members(self, term: str) -> list[str]:
        """眼底病变、眼底出血: a compound on a class of things (眼底) is written of each member as often (视网膜病变、
        黄斑出血). Not of a population (儿童近视): who is asked of is a question's own matter."""
        return [
            member + term[len(name) :]
            for name, members in self.members.items()
            if term.startswith(name) and len(term) - len(name) >= 2 and name not in self.populations
            for member in members
        ]

    def _patients_of(self, term: str) -> list[str]:
        """糖尿病人、青光眼病人: the people with a disease, which a text writes 糖尿病患者、青光眼患者 as often (and the
        other way); only of a disease the lexicon names (not the 重症 of 重症病人)."""
        if term.endswith("患者"):
            disease = term[:-2]
            person = "人" if disease.endswith("病") else "病人"
        elif term.endswith("病人"):
            disease = term[:-2] if self.is_entity(term[:-2]) else term[:-1]
            person = "患者"
        else:
            return []
        return [disease + person] if len(disease) >= 2 and self.is_entity(disease) else []

    def _condition_of(self, term: str) -> list[str]:
        """近视眼、远视眼、散光眼: the eye with the condition is named by the condition (近视), as texts mostly
        write it."""
        condition = term[:-1]
        return [condition] if len(term) >= 3 and term.endswith("眼") and self.is_medical(condition) else []


def _disease_of(term: str) -> list[str]:
    """常见病、传染病、职业病: a class of diseases a text writes out as 常见疾病、传染性疾病 as often."""
    if len(term) < 3 or not term.endswith("病") or term.endswith("疾病"):
        return []
    return [f"{term[:-1]}疾病", f"{term[:-1]}性疾病"]


# 几 after these says "several" (十几年、好几天、这几天、最近几天、前几年), it asks no number; 前 only opening a
# clause, for "术前几天停药" asks one
HEDGES = re.compile(r"(?:大概|大约|大致|一般|通常|到底|究竟)(?=有?多[高大少]|是多少|为多少)")
SEVERAL = re.compile(r"(?:[十好这那近头]|(?<![\u4e00-\u9fff])前)几")


def says_several(previous: str, word: str) -> bool:
    """`word` (几天、几年…) after the word `previous` means "several", not "how many". jieba keeps 术前、产前 whole,
    so a 前 of its own opens "前几年"."""
    return word.startswith("几") and (previous == "前" or (previous != "" and previous[-1:] in "十好这那近头"))


_ROMAN = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii"]
_ROMAN_SIGNS = "ⅰⅱⅲⅳⅴⅵⅶⅷⅸⅹⅺⅻ"  # Ⅰ…Ⅻ lower-cased: the one-character numerals guidelines write (Ⅱ期、Ⅲ级)
_AGENT_HEADS = ("药", "剂")  # 缩瞳药 / 缩瞳剂, 止痛药 / 止痛剂: one kind of medicine, spoken and written


def other_writings(term: str) -> list[str]:
    """The same name as a text may write it (lower-cased): the Roman numeral an asker types (II) as the one
    character a guideline prints (Ⅱ) and back; a medicine named by 药 or by 剂; a syndrome's 综合征 as 症候群.
    A kind written 型 or 性 (闭角型 / 闭角性). [] for any other term."""
    if term in _ROMAN:
        return [_ROMAN_SIGNS[_ROMAN.index(term)]]
    if len(term) == 1 and term in _ROMAN_SIGNS:
        return [_ROMAN[_ROMAN_SIGNS.index(term)]]
    if len(term) >= 3 and term.endswith(_AGENT_HEADS):
        return [term[:-1] + ("剂" if term.endswith("药") else "药")]
    # a syndrome as Taiwan, Hong Kong and the mainland write it (干眼综合征 / 乾眼症候群 / 干眼综合症), and the word
    # alone when the name before it is cut into words of its own (青光眼 睫状体 炎 综合征)
    head = next((h for h in _SYNDROME_HEADS if term.endswith(h)), "")
    if head:
        return [term[: -len(head)] + other for other in _SYNDROME_HEADS if other != head]
    # a kind written 型 or 性 (急性闭角型青光眼 / 急性闭角性青光眼, 过敏性结膜炎 / 过敏型结膜炎)
    return (
        [_KIND_MARK.sub(lambda m: "性" if m.group() == "型" else "型", term, count=1)]
        if _KIND_MARK.search(term)
        else []
    )


# 型 or 性 between a name's qualifier and its head (two characters or more each side, the 急性 of 急性闭角 aside)
_KIND_MARK = re.compile(r"(?<=[\u4e00-\u9fff]{2})(?<!急|慢)[型性](?=[\u4e00-\u9fff]{2})")


_SYNDROME_HEADS = ("综合征", "综合症", "症候群")


_COUNTED = re.compile(
    r"^([一二两三四五六七八九十]{1,3})(岁|周|星期|天|日|个月|月|年|次|小时|分钟|滴|片|粒|层|种|类|条|对|项|步|期|级|型)$"
)
_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def in_digits(term: str) -> list[str]:
    """A count the asker writes in Chinese numerals (一岁、两周) as guidelines write it: 1岁, or "1 岁" as a PDF's
    text layer spaces it. [] for any other term."""
    found = _COUNTED.match(term)
    number = _numeral(found.group(1)) if found else None
    return [f"{number}{found.group(2)}", f"{number} {found.group(2)}"] if number else []


def _numeral(text: str) -> int | None:
    """一 … 九十九 as a number (None for anything else: 十十)."""
    tens, _, ones = text.partition("十")
    if "十" not in text:
        return _DIGITS.get(text) if len(text) == 1 else None
    if len(tens) > 1 or len(ones) > 1 or "十" in ones:
        return None
    return (_DIGITS.get(tens, 0) if tens else 1) * 10 + (_DIGITS.get(ones, 0) if ones else 0)


def _asks_either(text: str, start: int, cue: str) -> bool:
    """ "适合不适合佩戴…的儿童" names one group (those who cannot wear it): the 不适合 of an "A不A" pair is no
    contraindication cue."""
    if not cue.startswith("不") or len(cue) < 2:
        return False
    positive = cue[1:]
    return text[max(0, start - len(positive)) : start] == positive


def load_lexicon(lexicon_dir: Path = LEXICON_DIR) -> Lexicon:
    raw = json.loads((lexicon_dir / "aspects.json").read_text(encoding="utf-8"))
    ask, passage = {}, {}
    for aspect, cues in raw["aspects"].items():
        ask.update(dict.fromkeys(cues["ask"], aspect))
        passage.update(dict.fromkeys(cues["passage"], aspect))
    tokenizer = get_tokenizer()
    units = {unit.lower() for q in raw["quantities"].values() for unit in q["units"]}
    listed = set(raw.get("populations", []))
    # …and their other names: 上了年纪 is 老人, 喂奶 is 哺乳期
    populations = listed | {t for group in tokenizer.synonyms if {g.lower() for g in group} & listed for t in group}
    # mm、mg say how much, 老人、孕妇 whom, and 舒服、牌子 are everyday words: not what is asked about
    wordings = {t.lower() for group in tokenizer.wordings for t in group}
    entities = {t.lower() for group in tokenizer.synonyms for t in group} - units - populations - wordings
    userdict = lexicon_dir / "userdict.txt"
    if userdict.exists():
        entities |= {
            line.split()[0].lower() for line in userdict.read_text(encoding="utf-8").splitlines() if line.strip()
        }
    lexicon = Lexicon(
        ask_cues=ask,
        passage_cues=passage,
        list_aspects={name for name, cues in raw["aspects"].items() if cues.get("list")},
        free_aspects=set(raw["free_aspects"]),
        answered_by={name: set(cues["answered_by"]) for name, cues in raw["aspects"].items() if "answered_by" in cues},
        function_words=set(raw["function_words"]),
        generic=set(raw["generic"]),
        quantity_words=set(raw["quantity_words"]),
        quantities={kind: (q["ask"], q["units"]) for kind, q in raw["quantities"].items()},
        quantity_search={kind: q.get("search", []) for kind, q in raw["quantities"].items()},
        quantity_answers={kind: q.get("answers", []) for kind, q in raw["quantities"].items()},
        joiners=set(raw["comparison_joiners"]),
        split_words=set(raw["split_words"]),
        follow_up=sorted(raw["follow_up"], key=len, reverse=True),
        demonstratives=set(raw["demonstratives"]),
        not_subjects=set(raw["not_subjects"]),
        populations=populations,
        age_groups=set(raw.get("age_groups", [])),
        age_words=set(raw.get("age_words", [])),
        medical_suffixes=tuple(raw.get("medical_suffixes", [])),
        entities=entities,
        synonym_groups=tokenizer.synonyms,
    )
    lexicon.kinds = _load_kinds(lexicon_dir / "kinds.json", lexicon)
    lexicon.members = _members(lexicon.kinds)
    lexicon.descriptions = _load_descriptions(lexicon_dir / "descriptions.json")
    return lexicon


def _load_descriptions(path: Path) -> list[tuple[re.Pattern, str]]:
    raw = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return [(re.compile(p), name) for name, patterns in raw.items() if not name.startswith("_") for p in patterns]


def _members(kinds: dict[str, list[str]]) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {}
    for member, names in kinds.items():
        for name in names:
            members.setdefault(name, []).append(member)
    return members


def _load_kinds(path: Path, lexicon: Lexicon) -> dict[str, list[str]]:
    """member → the names of its class, each class name with its synonyms (阿片类药物, 阿片类 …)."""
    raw = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    kinds: dict[str, list[str]] = {}
    for name, members in raw.items():
        if name.startswith("_"):
            continue
        for member in members:
            kinds.setdefault(member.lower(), []).extend(lexicon.variants(name))
    return kinds


@lru_cache(maxsize=1)
def get_lexicon() -> Lexicon:
    return load_lexicon()
