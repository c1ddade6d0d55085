"""What a question asks, as comparable data: its topic terms, the aspects it asks about, what kind of answer it wants.

    g = gist_of("OK镜适合哪些人？")
    g.entities, g.aspects, g.kinds          # {'角膜塑形镜'}, {'适应证'}, {'什么'}
    same_question(g, gist_of("角膜塑形镜的适应证有哪些？"))       # True: synonyms folded, aspect cue → aspect
    same_question(gist_of("阿托品的副作用"), gist_of("阿托品的禁忌证"))  # False: another aspect of one topic
    composite_reasons(gist_of("低浓度阿托品的效果和副作用？"))    # ['问了 2 个方面（疗效、不良反应）', …]

Built on the ophthalmology lexicon (clincite/text/lexicon: user dictionary, synonym groups, the aspect vocabulary of
aspects.json). Used by the similar-question cache (is this the question answered before?), by the fast-path gate
(does this question ask one thing?) and to merge near-duplicate sub-queries. Every comparison is conservative: two
questions are the same only when their aspects, domain terms, numbers and kinds of answer are the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from clincite.core.shapes import ChatTurn
from clincite.offline import analyse
from clincite.offline.lexicon import Lexicon, get_lexicon
from clincite.offline.questions import Together, previous_questions
from clincite.text.tokenizer import get_tokenizer

# The kind of answer a question wants, by its interrogative: "how long" and "how often" are different questions
# about the same topic and aspect. Open questions (什么, 哪些, 如何, 怎么…) all ask "tell me about it": no kind.
KINDS = {
    "多久": "时长",
    "多长时间": "时长",
    "多长": "时长",
    "几年": "时长",
    "几个月": "时长",
    "几次": "频次",
    "多少次": "频次",
    "多频繁": "频次",
    "几岁": "年龄",
    "多大": "年龄",
    "年龄": "年龄",
    "多少": "数量",
    "几": "数量",
    "哪个": "比较",
    "哪种更": "比较",
    "更好": "比较",
    "区别": "比较",
    "差别": "比较",
    "不同": "比较",
    "对比": "比较",
    "比较": "比较",
    "吗": "是否",
    "是否": "是否",
    "能否": "是否",
    "能不能": "是否",
    "可不可以": "是否",
    "是不是": "是否",
    "会不会": "是否",
    "有没有": "是否",
}
# Ask cues of one aspect that mean the same thing. Cues of one aspect that do not (并发症 and 危险因素 are both
# "风险与并发症", 护理 and 预防 both "注意事项") ask different questions: an answer to one is no answer to the other.
SAME_ASK = {
    cue: group[0]
    for group in (
        ("不良反应", "副作用", "副反应", "危害", "有害", "伤害", "坏处"),
        ("安全性", "安全"),
        ("适应证", "适应症", "适合", "适用", "适用人群", "适宜人群", "哪些人可以", "适合谁", "哪些人适合", "什么人"),
        ("禁忌证", "禁忌症", "禁忌", "不适合", "不适宜", "不宜", "不能用", "禁用", "不可以用", "不适用"),
        ("不能", "不可以", "不应该", "不应", "不建议", "禁止"),
        ("定义", "概念", "指什么", "是指", "是什么意思"),
        ("诊断标准", "判定标准"),
        ("作用机制", "机制", "原理", "作用途径", "怎么起作用"),
        ("原因", "为什么", "为何", "病因", "怎么会", "什么导致", "何故"),
        ("目的", "意义", "用途", "有什么用", "有何用"),
        ("疗效", "效果", "有效", "有用", "控制效果"),
        ("风险", "危险"),
        ("注意事项", "注意"),
        ("护理", "保养"),
        ("预防", "防范", "避免", "怎么防"),
        ("随访", "复查", "复诊", "定期检查"),
        ("用法用量", "用法", "用量", "剂量", "怎么用", "如何使用", "使用方法", "怎么点", "多大剂量", "用多少"),
        ("治疗", "怎么治", "如何治", "疗法", "处理方法", "治法"),
        ("处理", "怎么办", "如何处理", "怎么处理", "该怎么做", "如何应对", "怎么应对", "处置"),
        ("症状", "表现", "征象", "什么样", "有什么表现", "临床表现"),
    )
    for cue in group
}
OPEN_QUESTION = {"什么", "哪些", "哪种", "如何", "怎么", "怎样", "怎么样", "怎么办", "是什么"}
ONCE_IN = re.compile(r"(多久|多长时间|多长|几天|几周|几个月).{0,3}一次")  # 多久复查一次: how often, not how long
# Words that join two things asked about ("效果和副作用", "多焦软镜与OK镜", "阿托品联合OK镜").
CONJUNCTIONS = {
    *("和", "与", "及", "以及", "或", "或者", "还是", "、", "并且", "同时", "联合", "跟", "vs"),
    *("对比", "比较"),
}
FILLER = {
    *("的", "了", "是", "有", "吗", "呢", "吧", "啊", "呀", "请问", "一下", "一般", "通常"),
    *("能", "会", "要", "可以", "需要", "应该", "人", "者", "戴", "戴着", "佩戴", "警惕", "关注", "留意"),
}
PRODUCT_WORDS = {"镜片", "眼镜", "滴眼液"}  # after a product's name (HAL + 镜片), part of that name
SIMPLE_MAX_CHARS = 30  # a longer question usually asks more than one thing
_NUMBER = re.compile(r"\d+(?:\.\d+)?\s*(?:%|％|d|D|mm|毫米|岁|年|个月|小时|分钟|次)?")
_PUNCT = re.compile(r"^[\s\W_]+$")
_SENTENCE_END = re.compile(r"[？?。！!；;]")


@dataclass(frozen=True)
class Gist:
    text: str  # the question, whitespace and final punctuation removed
    aspects: frozenset[str]  # of the aspect vocabulary (适应证, 不良反应 …)
    asks: frozenset[str]  # the aspect cues used, synonymous ones folded (副作用 → 不良反应; 并发症 ≠ 危险因素)
    entities: frozenset[str]  # domain terms of the lexicon, synonyms folded to their group's first name
    terms: frozenset[str]  # every other content word (entities excluded)
    numbers: frozenset[str]  # 0.01%, 8岁, 2小时: a different number is a different question
    kinds: frozenset[str]  # the kinds of answer asked for (时长, 是否, 什么 …)
    joins: int  # conjunctions between things asked about
    sentences: int  # questions in the text

    @property
    def topic(self) -> frozenset[str]:
        return self.entities | self.terms


def gist_of(text: str) -> Gist:
    return _gist(" ".join(text.split()))


@lru_cache(maxsize=4096)
def _gist(text: str) -> Gist:
    lex = get_lexicon()
    core = text.strip().rstrip("？?。！!，,；; ")
    sentences = max(1, len([s for s in _SENTENCE_END.split(text) if s.strip()]))
    numbers = frozenset(n.group().replace(" ", "").lower() for n in _NUMBER.finditer(core))
    rest = _NUMBER.sub(" ", core)
    words = _merge_terms([w for w in get_tokenizer().words(rest) if w.strip()], lex)
    aspects, asks, kinds, entities, terms = set(), set(), set(), set(), set()
    joins = 0
    stopwords = get_tokenizer().stopwords
    for word in words:
        lowered = word.lower()
        if word in CONJUNCTIONS or lowered in CONJUNCTIONS:
            joins += 1
            kinds.update([KINDS[word]] if word in KINDS else [])
        elif word in KINDS:
            kinds.add(KINDS[word])
        elif word in OPEN_QUESTION:
            continue
        elif aspect := _aspect(word, lex):
            aspects.add(aspect)
            cue = _cue(word, lex)
            asks.add(SAME_ASK.get(cue, cue))
            if stem := _stem(word, lex):
                terms.add(stem)
        elif _PUNCT.match(word) or word in FILLER or word in lex.function_words or word in lex.generic:
            continue  # (儿童, 孩子: the lexicon's generic words never identify a topic, even in a synonym group)
        elif lowered in lex.entities:
            entities.add(canonical(lowered))
        elif word not in stopwords:
            terms.add(canonical(lowered))
    if ONCE_IN.search(core) and "时长" in kinds:
        kinds = (kinds - {"时长"}) | {"频次"}
    return Gist(
        text=core,
        aspects=frozenset(aspects),
        asks=frozenset(asks),
        entities=frozenset(entities),
        terms=frozenset(terms),
        numbers=numbers,
        kinds=frozenset(kinds),
        joins=joins,
        sentences=sentences,
    )


def _merge_terms(words: list[str], lex: Lexicon) -> list[str]:
    """Neighbouring words that form one lexicon term or cue (重复低强度红光 + 治疗, 不 + 适合), joined; a product
    word after a domain term belongs to it (HAL + 镜片)."""
    out, i = [], 0
    while i < len(words):
        if words[i] in PRODUCT_WORDS and out and out[-1].lower() in lex.entities:
            i += 1
            continue
        for j in range(min(len(words), i + 4), i + 1, -1):
            joined = "".join(words[i:j])
            if joined.lower() in lex.entities or joined in lex.ask_cues or joined in KINDS:
                out.append(joined)
                i = j
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _aspect(word: str, lex: Lexicon) -> str | None:
    if word in lex.ask_cues:
        return lex.ask_cues[word]
    if word.lower() in lex.entities and word not in lex.not_subjects:
        return None
    cue = next((c for c in lex.ask_cues if len(c) >= 2 and word.endswith(c) and len(word) > len(c)), None)
    return lex.ask_cues[cue] if cue else None


def _cue(word: str, lex: Lexicon) -> str:
    """The aspect cue a word is or ends with (激光治疗 → 治疗)."""
    if word in lex.ask_cues:
        return word
    return next((c for c in lex.ask_cues if len(c) >= 2 and word.endswith(c) and len(word) > len(c)), word)


def _stem(word: str, lex: Lexicon) -> str:
    """激光治疗 → 激光: the topic word in front of an aspect cue."""
    if word in lex.ask_cues:
        return ""
    cue = next((c for c in lex.ask_cues if len(c) >= 2 and word.endswith(c)), "")
    return canonical(word[: -len(cue)].lower()) if cue else ""


@lru_cache(maxsize=1)
def _canonical_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for group in get_tokenizer().synonyms:
        for term in group:
            names.setdefault(term.lower(), group[0].lower())
    return names


def canonical(term: str) -> str:
    """A term's synonym group's first name (OK镜 → 角膜塑形镜), or the term."""
    return _canonical_names().get(term.lower(), term.lower())


# --- comparing two questions ---------------------------------------------------------------------------------------


def same_asks(a: Gist, b: Gist) -> bool:
    """Same aspects, domain terms, numbers and kinds of answer: what no paraphrase changes."""
    return a.asks == b.asks and a.entities == b.entities and a.numbers == b.numbers and a.kinds == b.kinds


def same_question(a: Gist, b: Gist, cosine: float | None = None, threshold: float = 0.9) -> bool:
    """The same question in other words. Without embeddings: the same asks and the same other words, synonyms
    folded. With them (`cosine` of the two questions' embeddings): the same asks, and the embedding judges the rest
    of the wording."""
    if not same_asks(a, b) or not (a.topic or a.aspects):
        return False
    if a.terms == b.terms:
        return True
    return cosine is not None and cosine >= threshold


def near_duplicate(a: Gist, b: Gist) -> bool:
    """Two sub-queries that would search for the same thing (the one slot is enough): same asks, and one's other
    words contain the other's."""
    return same_asks(a, b) and (a.terms <= b.terms or b.terms <= a.terms)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / denominator) if denominator else 0.0


# --- one thing asked, or several ------------------------------------------------------------------------------------


def composite_reasons(g: Gist) -> list[str]:
    """Why a question asks more than one thing (empty: it asks one)."""
    reasons = []
    if len(g.aspects) > 1:
        reasons.append(f"问了 {len(g.aspects)} 个方面（{'、'.join(sorted(g.aspects))}）")
    if g.joins:
        reasons.append("并列或比较了几项")
    if "比较" in g.kinds:
        reasons.append("是一个比较")
    if g.sentences > 1:
        reasons.append(f"包含 {g.sentences} 个问句")
    if len(g.text) > SIMPLE_MAX_CHARS:
        reasons.append(f"较长（{len(g.text)} 字）")
    return reasons


# --- a follow-up ---------------------------------------------------------------------------------------------------


def resolved_follow_up(question: str, history: list[ChatTurn], together: Together | None = None) -> str | None:
    """A question that continues the chat's previous one ("那副作用呢？") with that topic put in
    ("低浓度阿托品副作用"), or the aspects it asked ("那HAL呢？" after a question about DIMS's 原理); None for a
    question that stands on its own. `together`: the KB's word on whether a new subject goes with the last one
    (`clincite.offline.questions.written_together`)."""
    previous = previous_questions(history)
    if not previous:
        return None
    ask = analyse(question, previous, together=together)
    if not ask.follow_up:
        return None
    return " ".join([ask.resolved, *(aspect for aspect in ask.aspects if aspect not in ask.resolved)])


def question_search_text(question: str) -> str:
    """What the question itself (q0) is searched with: the question, and the names of the aspects it asks in its own
    words ("高度近视有哪些眼底并发症？ 风险与并发症"), as the headings of the guidelines name them."""
    missing = [aspect for aspect in sorted(gist_of(question).aspects) if aspect not in question]
    return " ".join([question.strip(), *missing])
