"""What a question asks, as data: its content terms, the aspects it asks about, and the subject a follow-up means.

    ask = analyse("哪些孩子不适合验配角膜塑形镜？")
    [t.text for t in ask.terms], ask.aspects         # ['孩子', '验配', '角膜塑形镜'], ['禁忌证']
    analyse("那副作用呢？", previous=["低浓度阿托品的效果如何？"]).subject      # '低浓度阿托品'
    analyse("补充维生素D有用吗？", previous=["红光治疗安全吗？"]).follow_up    # False: 维生素D is a subject

Function words of a question (分别、哪些、是什么、吗、呢 …) never become terms: they reach no search and no relevance
test. Words that ask for an aspect (副作用、禁忌证、为什么 …) are aspects, a boost to relevance. Everything else is a
content term — a word the lexicon does not know included: an unknown word is a subject of its own, so a question
with one is never read as a follow-up of the last one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import pairwise
from typing import Protocol

from clincite.core.shapes import ChatTurn
from clincite.offline.lexicon import Lexicon, get_lexicon, says_several
from clincite.report.format import ABSTAIN_TLDR, first_place_of, tldr_of
from clincite.text.script import fold
from clincite.text.tokenizer import VERB_ENDINGS, get_tokenizer

TRAILING = "？?。！!，,、 ；;：:"
PARTICLES = ("吗", "呢", "吧", "啊", "呀")
ASKING_FORMS = {
    "能不能": "能否",
    "可不可以": "可否",
    "会不会": "会否",
    "要不要": "要否",
    "是不是": "是否",
    "有没有": "有否",
    # whether it will do: what is asked is the rest of the question ("只点眼药水够不够？"), not 够 or 行
    "够不够": "是否",
    "行不行": "是否",
    "好不好": "是否",
    "对不对": "是否",
    "算不算": "是否",
    "靠不靠谱": "是否靠谱",  # whether a treatment or product works as claimed: 靠谱 asks its 疗效
}
TREATMENT_VERB = "治疗"
CONTRAINDICATION = "禁忌证"
DIAGNOSIS = "诊断"
STAGE_WORDS = {"后", "前", "以后", "之后", "以前", "之前"}  # after 确诊 they say when: 确诊后
JUDGING_CUES = ("安全",)  # with a number asked, these judge it ("几个小时比较安全"): the limit is asked, not harm
SITUATION_ASKS = {"原因", "处理", "目的"}  # why / what to do: a 几 or 多少 beside them describes, it does not ask
# "布洛芬这类NSAIDs", "阿托品这种药": the word before names one of the kind the word after names
INSTANCE_MARKERS = {"这类", "此类", "这种", "之类", "这样", "一类"}
INDICATING = {"提示", "预示", "意味着", "说明", "代表"}  # with 什么/哪里 after them they ask what a sign points to
_WHAT = re.compile(r"(?:什么|哪|啥|何)")
CAUSING = {"引起", "导致", "造成", "引发", "诱发"}  # after 什么/啥/怎么 they ask what caused it ("是啥引起的")
CAUSE_WHAT = {"什么", "啥", "怎么", "咋", "哪些", "何"}
CAUSE_BETWEEN = {"是", "会", "由", "能", "可能", "到底", "究竟"}  # "是由什么造成的": words between asker and verb
GOT_VERBS = {"得", "来", "长"}  # "这是怎么得的", "怎么来的": how one came to have it
CAUGHT_VERBS = {"感染", "染", "患", "得", "惹"}  # "怎么感染上的": with 上, how one came to catch it
_NOW_OR_LATER = r"(?:马上|立即|立刻|现在|尽早|尽快|当天|等一等|等一段|等到|一段时间|过段时间|过几天|以后再|之后再|稍后)"
_WHEN_CHOICE = re.compile(rf"{_NOW_OR_LATER}[^，,。？?；;]*还是|还是[^，,。？?；;]*{_NOW_OR_LATER}")
RATING_VERBS = {"定", "算", "评", "判", "属于", "定为", "评为", "算是", "属"}  # "定几级": which grade, asked of a case
# after 那/这/每/一 they count ("开的那张证明"): no word to find
CLASSIFIERS = set("张个支瓶副盒片粒根条位件份本台层只")
POINTING = set("那这哪每一两几")
WHOLE = set("整满半")  # 整片、满瓶、半张: how much of a thing, as 一片 is
WITHIN = "内"  # "多长时间内有效": part of the time asked, not a word a text must have
VALID = "有效"  # "…内有效", "有效期": how long something stays valid, not whether a treatment works (疗效)
OBJECT_VERBS = {"预防", "避免", "防范", "抗"}  # with an object after them they ask about an effect, not for precautions
HOW_WORDS = {"怎么", "如何", "怎样", "咋", "该怎么", "怎么样"}
RISKS = "风险与并发症"
PREVENTED_SPAN = 3
BARE_NUMBER = "number"  # the quantity of a bare 多少/几: a figure of no kind in particular
SWITCH_WORDS = {"那", "那么", "还有", "另外"}
# 她、他 before the question names anyone: the person of the case the chat is about (a patient, a wearer), not a
# person the question introduces ("孩子近视了，他能戴OK镜吗？")
PERSON_POINTERS = {"她", "他"}
PLACE_POINTERS = {"那里", "那儿", "那边", "这里", "这儿"}  # at the opening, the place asked of before
ANOTHER_QUESTION = ("另外", "还有", "顺便")
GOING_ON = SWITCH_WORDS - set(ANOTHER_QUESTION)  # 那、那么: a question opening on them goes on from the last one
OWNERS = {
    "我",
    "我的",
    "孩子",
    "他",
    "她",
    "患者",
    "病人",
    "家长说",
}  # "那HAL呢？": the previous question, asked of a new subject
CHOICE_JOINERS = ("还是", "或", "或者")  # of lexicon.joiners: the ones that offer a choice
DEGREE_ADVERBS = ("比较",)  # of lexicon.ask_cues: before an adjective an adverb of degree, not a comparison
MANY_WORDS = ("哪些", "哪几个", "哪几种", "哪几类", "有几种")  # of lexicon.function_words: they ask for several things
# of lexicon.quantity_words: nouns naming what is measured, which a text heads its figures with (常用浓度): searched too
MEASURED = {"浓度", "频率", "概率", "几率", "机率"}
VISIT_EVENTS = {"住院", "入院", "出院", "就诊", "看病", "复诊"}  # a visit placing the question in time (住院前)
PLACING_AFTER = r"[之以]?(?:前|后|时(?!间)|期间)"  # …right after it (住院前、入院之前、住院期间; not 住院时间)
NUMBER_BOUNDS = {"最晚", "最迟", "最早"}  # a deadline put on the time asked ("最晚要提前多久")
EITHER_JOINERS = ("或", "或者")  # … of which either one is asked about ("开着小夜灯或者大灯"), not which one (还是)
TOGETHER_SHARE = 0.3  # a new subject this often written with the last one goes on in its setting
DRUG_NAME_RARITY = 12.0  # a word a dosage form is written onto names a drug when this rare (依匹斯汀, not 中药)
NAMING_RARITY = 11.0  # general-Chinese rarity (Tokenizer.general_rarity) from which a word names a subject itself
SHORT_FOLLOW_UP = 12  # characters: a question this short without a subject of its own continues the last one
# a short question opening with one of these drops its subject, the chat's ("会影响视力吗？", "能用热敷吗？"): Chinese
# leaves it out, and 视力 or 热敷 is what is asked of it
MODAL_OPENINGS = {
    "会",
    "会否",
    "能",
    "能否",
    "可以",
    "可否",
    "要",
    "要否",
    "需要",
    "应该",
    "该",
    "是否",
    "有否",
    "还能",
    "还会",
    "还要",
}
_PUNCT = re.compile(r"^[\W_]+$")
# Words on either side of a clause break never make one term: "散瞳查眼底，检查完…" is no 眼底检查.
_CLAUSE_BREAK = re.compile(r"[，。；！？、,;!?\n]+")
LISTED = "、"
_LISTING_BREAK = re.compile(r"([，。；！？,;!?\n]+|、)")


def _clauses_of(text: str, lex: Lexicon) -> list[str]:
    """The question's clauses; where it asks of each thing it names (分别、各自), a "、" between two of them stays, as
    the joiner it is ("宝宝长了霰粒肿、泪道不通，分别怎么处理？" asks of each)."""
    if not any(word in text for word in lex.split_words):
        return _CLAUSE_BREAK.split(text)
    return [piece for piece in _LISTING_BREAK.split(text) if piece == LISTED or not _CLAUSE_BREAK.fullmatch(piece)]


# 哪几天: which days, a number too; 哪几个时期 asks which ones (a list), not how many
_ASKS_NUMBER = re.compile(r"^(?:哪?(?:多少|多久|多长|几[次天日周月年岁级针点度])|几个)")
# "什么是X / X是什么 / X到底是什么东西 / X是啥": what X is, when nothing else is asked (定义, a free aspect: a boost)
_WHAT_IS = re.compile(r"^什么是|^[^哪几最]*是(?:什么|啥)(?:东西|意思|病)?$")
_CODE = r"(?=[A-Za-z\d-]*\d)[A-Za-z][A-Za-z\d]*(?:-[A-Za-z\d]+)*"  # Latin letters with a digit: DN4, IL-6
_NUMBER_SPLIT = re.compile(rf"((?<![A-Za-z\d-]){_CODE}(?![A-Za-z\d])|\d+(?:\.\d+)?\s*[%％]?)")
_CODE_NAME = re.compile(_CODE)
# 三类、两种、每层、两只: a count
_COUNT_WORD = re.compile(r"^(?:[一二两三四五六七八九十几多]{1,2}|每)[类种个项大条点样层只副]$")
NUMERALS = set("一二两三四五六七八九十")  # a numeral standing alone
MOST = "最"
_CORRELATIVE = re.compile(r"越[\u4e00-\u9fff]{1,2}越")  # "越热越好": the 越…越 the asker compares by, no word to find
_QUOTED = re.compile(r"[“\"「『‘]([^”\"」』’]{1,20})[”\"」』’]")
MAX_QUOTED_CHARS = 12  # a longer quote is a sentence the asker recalls, not a word to find
_ASKS_GRADES = re.compile(r"^几[级期型]$")
RESULT_COMPLEMENTS = set("通清见着动完掉住开出进到")  # 灌不通、冲不掉: what a verb did not achieve
RESULTS = {"出来", "进去", "干净", "下来", "出去", "进来"}  # 冲不出来、洗不干净
_CJK = re.compile(r"^[\u4e00-\u9fff]$")
_LETTER_TAIL = re.compile(r"^[A-Z]\d?$")  # 维生素 + D, 维生素 + B12 is not one (B12 keeps its own token)


# A clause asks when it has a question word (啥、多少、为啥、能否 as _normalise_asking writes 能不能, 行不行 …);
# the question's last clause asks whether or not (its 吗 was stripped)
_ASKING_CLAUSE = re.compile(r"[吗呢么啥哪几谁怎否]|什么|多少|多久|多长|多大|如何|为何|分别|区别|还是|(.)不\1")
_JOINED_TO_IT = re.compile(r"^(?:它|其|这个|这种|该病|那个)\s*(?:和|跟|与|同)")
_QUESTION_END = re.compile(r"(?<=[？?])")
TAG_QUESTION_CHARS = 3  # "对吗？" "是吗？" "真的吗？": a check on the question before, no question of its own
_ASKS_WHICH = re.compile(r"哪|选|更|优先|比较")  # words that make "A或B" a choice between them
_BRACKETED = re.compile(r"[（(][^（）()，,。？?]{1,24}[）)]")  # a second name the asker adds: 泪膜破裂时间（BUT）
# "哪些药", "眼药举了哪些例子": the drugs a text names are asked for
_ASKS_DRUGS = re.compile(r"(?:哪些|哪种|哪类|哪几种|什么|啥)(?:药|眼药)|药[^，,。？?]{0,3}举了?(?:哪些|哪几)")
# "最主要、最常见、哪一段最长": the degree a question asks for. Not 最近 (lately), 最后 (at last), 最初, 最终, 最好
# (as advice: "最好在几岁做" asks when, and a text says 黄金期 as often as 最好).
_SUPERLATIVE = re.compile(
    r"最为?(主要|常见|多见|重要|严重|容易|易|危险|关键|有效|可能|多|少|长|短|薄|厚|大|小|高|低|早|快|慢)"
)
_ASKS_RULE = re.compile(r"(?:什么|哪些|啥|有没有)(?:具体)?(?:要求|规定)")
_HOW_MUCH = re.compile(r"多(?:高|少|久|长|远|深|重|宽|厚|快)(?:[啊呀呢吗]?$|[，,？?])")
_CLAUSE_END = re.compile(r"[，,；;。？?！!]")


@dataclass
class Term:
    text: str
    variants: list[str]  # lower-cased: the term and its synonyms
    entity: bool = False  # a domain term of the lexicon
    generic: bool = False  # never identifies a topic on its own (孩子, 方法): weighed low
    inherited: bool = False  # the previous question's subject, for a follow-up
    quoted: bool = False  # the asker put it in quotes (哪几个“不要”): the text's own word, whatever it is
    modifier: bool = False  # "X的Y": X says whose Y is asked (手术显微镜的脚踏), Y is what is asked about
    either: str = ""  # "A或B": the term this one is an alternative to (B's is A); a text may name either
    glossed: bool = False  # named with a second name in brackets: 威尔眸（Vigamox）, a product the asker names
    context: bool = False  # the chat's last subject, carried along as context: weighed where named, never required
    # Written only in a clause that asks nothing ("天天对着电脑上班，…，为啥…"): the asker's scene, an everyday word
    # that ranks a passage naming it but is never missed where a passage does not
    scene: bool = False
    # Written only in clauses before the one that asks (散瞳、眼底 of "等一下要散瞳查眼底，检查完当天可以开车吗？"),
    # domain terms included: they place the question; which sentence answers it is for the asking clause to say
    told: bool = False
    # What a drug the question names is for, told before the clause that asks (过敏性结膜炎 of "奥洛他定滴眼液治过敏性
    # 结膜炎发痒，一天点几次？"): a monograph's 用法用量 does not repeat its 适应证 — it ranks, never decides
    purpose: bool = False
    # Whose or where the thing asked of is, pointed at with 那个 (卫健委 of "卫健委那个近视防控指南…", 宜兰 of "宜兰那个
    # 糖友眼底筛查…"): the body that issued it or the place it runs in, which a notice names once at its top if at all
    # — it ranks, never decides, and is not what is asked about
    owner: bool = False
    # What one asks when one may do (游泳 of "术后多久可以游泳？", 开车 of "几天能开车"): an everyday word, yet the
    # question's very point — a passage that never names it gives some other time
    activity: bool = False
    # The kind of answer wanted, named right after the asking word (部件 of "眼皮相当于相机的哪个部件"): a text gives
    # the thing itself (镜头盖) — where the library never writes the word, it cannot decide
    kind: bool = False
    # The name a described sign is asked by (夜盲症 of "一到晚上就看不清东西"): where the library never writes it, the
    # description's own words are all there is to go on
    named_for: bool = False

    @property
    def ranks_only(self) -> bool:
        """What a drug is for (`purpose`) or who issued the thing asked of (`owner`): it ranks a passage naming it,
        never decides, is never missed where a passage does not name it, and is not what is asked about."""
        return self.purpose or self.owner


@dataclass
class Ask:
    question: str  # as asked
    resolved: str  # the previous subject in place of 它/那…, without question marks
    terms: list[Term] = field(default_factory=list)
    aspects: list[str] = field(default_factory=list)
    cues: list[str] = field(default_factory=list)  # the words the question used for its aspects (复查, 不适合)
    quantity: str = ""  # the number asked for: a kind of lexicon.quantities (时间、剂量 …), "number", or ""
    follow_up: bool = False
    joined: bool = False  # "A和B": two subjects joined
    choice: bool = False  # "A还是B": which of them (for whom, when): what tells them apart
    each: bool = False  # "分别、各自": every subject (or aspect) answered on its own
    many: bool = False  # "哪些设备…": the answer is several things, typically a list
    compared: list[list[Term]] = field(default_factory=list)  # "A和B": the noun phrases joined (生长痛 | 骨肉瘤)
    same_message: bool = False  # asked right after another question in the same message ("…？要多久才能适应？")
    drugs_asked: bool = False  # "吃哪些药会…", "用什么药": the answer names drugs (…药、…剂)
    rule_asked: bool = False  # "对隐形眼镜有什么要求": what must or must not be done, as a rule says it
    superlatives: list[str] = field(default_factory=list)  # "最主要的原因", "哪一段最长": the degree asked (主要, 长)
    lasting: str = ""  # "要趴着保持多少天": what is kept up for the time asked (趴着)
    setting: list[Term] = field(default_factory=list)  # the chat's last subject, for a question naming its own:
    # judged where a passage names it (加巴喷丁's dose for PHN, in a chat on PHN), never searched or shown

    @property
    def wants_number(self) -> bool:
        return bool(self.quantity)

    @property
    def subjects(self) -> list[Term]:
        """The terms that name what is asked about: domain terms, else every non-generic term (停药、副作用 and the
        like are aspects of a subject, not subjects)."""
        lex = get_lexicon()
        # what a named drug is asked as used for (过敏性结膜炎 of "奥洛他定滴眼液治过敏性结膜炎…") is not the subject
        own = [t for t in self.terms if not (t.generic or t.context or t.ranks_only or places_in_time(t))]
        # the asker's picture of it (黏糊糊的, 用纱布把…) is never what is asked about, while anything else is named
        own = [t for t in own if not (t.scene and _pictured(t.text, self.resolved))] or own
        specific = [t for t in own if t.text.lower() not in lex.not_subjects]
        named = [t for t in specific if t.entity or _abbreviation(t.text) or _proper_name(t) or self.names_drug(t)]
        # 长期用激素眼药水…: no domain term but 眼药水, which is a form rather than a subject; still the best name of it
        forms = [t for t in own if t.entity and t not in specific]
        # …unless the drug it is a form of is named (色甘酸钠滴眼剂, 激素眼药水): that is what is asked about
        drugs = [t for t in specific if self.names_drug(t)] if forms else []
        return named or drugs or (forms if specific else []) or specific

    def names_drug(self, term: Term) -> bool:
        """A drug's name (`Tokenizer.is_drug_name`), or a word the question writes a form onto (依匹斯汀眼药水)."""
        tokenizer = get_tokenizer()
        if tokenizer.is_drug_name(term.text):
            return True
        if any(  # one word of the lexicon, the drug and its form: 阿托品眼用凝胶
            tokenizer.is_drug_name(term.text[:cut]) and tokenizer.is_dosage_form(term.text[cut:])
            for cut in range(2, len(term.text) - 1)
        ):
            return True
        at = self.resolved.find(term.text)
        if at < 0 or tokenizer.is_dosage_form(term.text) or not _HAN_WORD.fullmatch(term.text):
            return False
        if tokenizer.general_rarity(term.text) < DRUG_NAME_RARITY:
            return False  # 中药滴眼液: a kind of eye drops, not a drug's name
        after = [w for w in tokenizer.words(self.resolved[at + len(term.text) :])[:2] if w != "的"]
        return bool(after) and tokenizer.is_dosage_form(after[0])  # 依匹斯汀眼药水, 依匹斯汀的滴眼液

    @property
    def names_domain_term(self) -> bool:
        """Whether a subject is a domain term or an abbreviation, not only the asker's everyday words."""
        return any(t.entity or _abbreviation(t.text) for t in self.subjects)

    @property
    def subject(self) -> str:
        """The most specific subject (the longest domain term), else the content words as written: what titles use."""
        subjects, lex = self.subjects, get_lexicon()
        # "RGP硬镜和软镜比有哪些好处": what the first is measured against is no subject of its own
        subjects = [t for t in subjects if t.text not in _references(self.resolved)] or subjects
        if subjects:
            # "威尔眸（Vigamox）除了细菌性结膜炎…": the product the asker names and glosses is what is asked about
            # "孕妇得了过敏性结膜炎，能用依匹斯汀眼药水吗？": the drug named for a disease is what is asked about
            # "香港的耀眼行动是个什么计划": the place says whose plan it is; the plan is what is asked about
            return max(
                subjects,
                key=lambda t: (
                    _proper_name(t) and not _counted(self.resolved, t.text),
                    self.names_drug(t),
                    t.entity,
                    not get_tokenizer().is_place(t.text),
                    not t.text.isascii(),
                    len(t.text),
                    # "眼睛红得像兔子，红眼病是什么病？": of two alike, the disease the asking clause names
                    not t.told and lex.is_medical_wording(t.text),
                ),
            ).text
        return "".join(t.text for t in self.terms) or self.resolved

    @property
    def shown_subject(self) -> str:
        """What a clinician reads as the subject: the last subject carried along when the question names nothing of
        its own ("一般会持续多久？" after 近视激光手术后干眼 → 近视激光手术、干眼), else `subject`."""
        carried = [t.text for t in self.terms if t.context]
        if carried and not any(_names_a_subject(t) for t in self.terms if not t.context):
            return "、".join(carried)
        return self.subject

    def search_text(self, aspect: str = "", subjects: list[Term] | None = None) -> str:
        """What search gets, readable as a sub-query: "离焦框架眼镜的禁忌证", then the question's other content words
        and its own words for the aspect ("不适合"); never a question word."""
        chosen = subjects if subjects is not None else self._heads()
        head = self.named(chosen)
        if aspect:
            head = f"{head}的{aspect}" if head else aspect
        lex = get_lexicon()
        others = [t for t in self.terms if t not in chosen and (subjects is None or t not in self.set_apart)]
        # inherited words first (激光 of "想做近视激光…" goes on with 近视), then the question's own, in its order
        others.sort(key=lambda t: (not t.inherited, t.text not in self.resolved))
        rest = [t.text for t in others]
        rest += [c for c in self.cues if lex.aspect_of(c) == aspect and c != aspect] if aspect else []
        rest += lex.quantity_search.get(self.quantity, [])  # "孩子多大可以戴OK镜": where the text gives an age
        return " ".join(dict.fromkeys(w for w in [head, *rest] if w)) or self.resolved

    def named(self, terms: list[Term]) -> str:
        """Terms as a clinician reads them: as the question writes them when they stand together (生长痛 of 生长 +
        痛), else listed (DIMS、HAL)."""
        together = "".join(t.text for t in terms)
        return together if len(terms) > 1 and together in self.resolved else "、".join(t.text for t in terms)

    @property
    def set_apart(self) -> list[Term]:
        """The terms one part of "A和B分别…" is not about when it is about one of them: the joined phrases (the
        question's other words — 急性中耳炎 of "…耳痛和发烧分别…" — go with every part), else every subject."""
        return [t for group in self.compared for t in group] if self.compared else self.subjects

    def _heads(self) -> list[Term]:
        """What a part of the question is about: "A和B" both, else the one most specific subject."""
        if self.joined:
            return self.subjects
        return [t for t in self.subjects if t.text == self.subject][:1]

    def sub_queries(self) -> list[tuple[str, str, list[Term] | None]]:
        """(search text, aspect, subjects) per part of the question: one per aspect when several are asked, one per
        subject for "A和B有什么区别 / 分别…", else the question as one."""
        if len(self.aspects) >= 2:
            return [(self.search_text(aspect), aspect, None) for aspect in self.aspects]
        subjects = self.subjects
        # "A还是B" is one question (which one, for whom): answered where the text weighs them, not of each apart
        sides = max(len(subjects), len(self.compared))  # two kinds of one subject (板层/穿透性角膜移植) are two
        if self.joined and sides >= 2 and (self.each or ("区别" in self.aspects and not self.choice)):
            aspect = self.aspects[0] if self.aspects else ""
            groups = self.compared or [[s] for s in subjects]
            return [(self.search_text(aspect, group), aspect, group) for group in groups]
        aspect = self.aspects[0] if self.aspects else ""
        return [(self.search_text(aspect), aspect, None)]


class Passages(Protocol):
    """What the KB's keyword index tells of its passages (`clincite.kb.bm25.BM25Index`)."""

    def passages_with(self, tokens: list[str]) -> set[int]: ...


Together = Callable[[list["Term"], list["Term"]], bool]  # does the library write of the new with the last subject?


def written_together(index: Passages | None) -> Together | None:
    """Whether the KB writes of the question's own subject mostly together with the chat's last one (in
    TOGETHER_SHARE of the passages naming it, or more): the library's own word on whether they belong together
    (加巴喷丁 with 带状疱疹后神经痛 in a library on pain, not 维生素D with 红光治疗, nor 早产儿视网膜病变 with 眼药水
    because one page of hundreds names both). A term the library never names (孕妇 in a chat on PHN) goes with the
    chat."""
    if index is None:
        return None
    tokenizer = get_tokenizer()

    def passages(term: Term) -> set[int]:
        found: set[int] = set()
        for variant in term.variants:
            tokens = tokenizer.tokenize(variant)
            found |= index.passages_with([variant] if variant in tokens else tokens)
        return found

    def together(new: list[Term], last: list[Term]) -> bool:
        # The rarest of the new terms the library knows says most of what the question is about (利多卡因, not 起效);
        # one it never names (孕妇 in a chat on PHN) leaves the chat's setting as all there is to go on.
        known = [named for named in map(passages, new) if named]
        if not known:
            return True
        rarest = min(known, key=len)
        return len(rarest & set().union(*map(passages, last))) >= TOGETHER_SHARE * len(rarest)

    return together


FINDINGS_CARRIED = 2  # domain terms of an answer's TL;DR a follow-up may go on with
FINDINGS_KEPT = 1024  # earlier questions read with their answers, kept: chats re-read them at every step
FINDING_ASPECT = "诊断结果"


def previous_questions(history: list[ChatTurn]) -> list[str]:
    """The chat's earlier questions, oldest first, each as a follow-up reads it: where one asked what the
    asker's trouble is ("医生查出了啥？", "这是什么病？") and its answer named it, with that name after it
    ("…查出了啥：睑板腺功能障碍、干眼症"), for "那这个还能完全恢复吗？" asks on about what the answer found, not
    about the story the question told."""
    questions = []
    for index, turn in enumerate(history):
        if turn.role != "user":
            continue
        reply = history[index + 1] if index + 1 < len(history) else None
        answer = reply.content if reply is not None and reply.role == "assistant" else ""
        questions.append(with_finding(turn.content, tldr_of(answer), first_place_of(answer)))
    return questions


def with_finding(question: str, tldr: str, place: str = "", lexicon: Lexicon | None = None) -> str:
    """`question`, with the domain terms its answer named after it where it asked what the trouble is: the disease
    that titles the place its first quote stands (原文位于“慢性泪囊炎”, “飞蚊症-眼科医院转载”), then its TL;DR's."""
    if lexicon is None:
        return _with_finding(question, tldr, place)  # every step of every later turn reads the chat's questions again
    return _finding_added(question, tldr, place, lexicon)


@lru_cache(maxsize=FINDINGS_KEPT)
def _with_finding(question: str, tldr: str, place: str) -> str:
    return _finding_added(question, tldr, place, get_lexicon())


def _finding_added(question: str, tldr: str, place: str, lex: Lexicon) -> str:
    if not tldr or tldr.startswith(ABSTAIN_TLDR.split("“")[0]):
        return question
    ask = analyse(question, lexicon=lex)
    if not _asks_finding(ask):
        return question
    asked = fold(question).lower()
    titled = [word for word in _named_in(place, asked, lex) if lex.is_medical_wording(word)]
    named = _named_in(tldr, asked, lex)
    if FINDING_ASPECT not in ask.aspects:
        # what happened is a disease the answer names (飞蚊症), not the words it explains it with (玻璃体、分泌物)
        # …or the one it says what it is of ("斜视是一种很常见的眼部疾病")
        named = [word for word in named if lex.is_medical_wording(word) or _defined_in(tldr, word)]
    names = list(dict.fromkeys([*titled, *named]))[:FINDINGS_CARRIED]
    return f"{question.strip().rstrip(TRAILING)}：{'、'.join(names)}" if names else question


def _defined_in(text: str, word: str) -> bool:
    return re.search(re.escape(word) + _DEFINED_AS, fold(text), re.IGNORECASE) is not None


_DEFINED_AS = r"(?:是一种|是一类|是指|指的是|就是|又称|俗称)"


def _named_in(text: str, asked: str, lex: Lexicon) -> list[str]:
    """The domain terms `text` names that the question did not."""
    return [
        word
        for word in dict.fromkeys(get_tokenizer().words(fold(text)))
        if word.lower() in lex.entities and word.lower() not in asked
    ]


def _asks_finding(ask: Ask) -> bool:
    """Whether a question asks what the asker's trouble is: "医生查出了啥？", or a story of what was seen and felt
    that asks what happened ("眼前总有小黑影飘来飘去，这是怎么回事？"), naming no disease of its own."""
    if FINDING_ASPECT in ask.aspects:
        return True
    happened = _WHAT_HAPPENED.search(ask.resolved)
    if not happened:
        return False
    # the kind of trouble asked for (眼病 of "这到底是一种什么样的眼病") is the question's, not the story's
    told = [t for t in ask.terms if not t.generic and t.text not in happened.group()]
    return bool(told) and all(t.told or t.scene for t in told)


_WHAT_HAPPENED = re.compile(
    r"(?:怎么|咋|怎样)(?:一)?回事|怎么了"
    r"|[这那](?:又|到底|究竟)?是(?:一种|一个|种)?(?:啥|什么)(?:样的?)?(?:眼?病|眼疾|毛病|情况|东西|问题)?$"
)


def analyse(
    question: str,
    previous: list[str] | None = None,
    lexicon: Lexicon | None = None,
    together: Together | None = None,
    same_message: bool = False,
) -> Ask:
    """Analyse a question; `previous` are the earlier user questions of the chat, oldest first (`same_message`: the
    last of them was asked in the same message, just before this one). `together`
    (`written_together`): whether the library writes of the question's own subject mostly with the last one, which
    makes a question naming a subject of its own a follow-up of the last one."""
    lex = lexicon or get_lexicon()
    question = fold(question)  # 兒童近視 is asked as 儿童近视: the lexicon and the folded index are in Simplified
    text = question.strip().strip(TRAILING)
    text = _space_after_opener(_normalise_asking(text), lex)
    while text.endswith(PARTICLES) and len(text) > 1:  # 有用吗 → 有用: a particle glued to the last word
        text = text[:-1].rstrip(TRAILING)
    tokens = [
        word
        for clause in _clauses_of(text, lex)
        for word in ([LISTED] if clause == LISTED else _merge(_potential_complements(_words(clause)), lex))
    ]
    ask = Ask(question=question, resolved=text, same_message=same_message)
    marker = _classify(ask, tokens, lex, bool(previous))
    _diopters_named(ask)
    _reason_over_negation(ask, lex)
    _drop_who_asked(ask, text)
    _mark_quoted(ask, question, lex)
    _mark_parenthesised(ask)
    _name_described_signs(ask, _described_signs(text, lex), lex)
    _mark_class_named(ask)
    ask.quantity = lex.quantity_asked(_without_names(text, ask.terms)) or ask.quantity
    if not ask.quantity and _FREQUENCY_PUT.search(text) and "次数" in lex.quantities:
        ask.quantity = "次数"  # "能不能一天点两次": whether a frequency may be is asked by the one the text sets
    if not ask.quantity and _HOW_MUCH.search(text):
        ask.quantity = BARE_NUMBER  # "眼压一般能飙到多高": jieba cut 多高 apart (能飙 / 到 / 多 / 高)
    if ask.quantity and set(ask.aspects) & SITUATION_ASKS:
        ask.quantity = ""  # "连着刷几个小时平板，视力为啥会掉下来": 几个小时 tells what happened; 为啥 is asked
    if _SEE_A_DOCTOR_WHEN_NO_EFFECT.search(text) and ask.quantity:
        # "点了多久没效果要去医院": when to seek care, which an insert's 注意事项 says ("用药7天症状无缓解，应去医院
        # 就诊"), not how well it works
        ask.aspects = [a for a in ask.aspects if a != "疗效"]
    _number_over_treatment(ask, tokens, lex)
    _number_judged_safe(ask, lex)
    _mark_modifiers(ask)
    _mark_scene(ask, lex)
    _mark_instrument(ask)
    _mark_where_obtained(ask)
    _mark_when(ask)
    _mark_purpose(ask)
    _mark_felt_after_use(ask, lex)
    _mark_nature_asked(ask, lex)
    _negation_told(ask, lex)
    _undone_told(ask, lex)
    _mark_described(ask, lex)
    _mark_adverbs(ask, lex)
    _mark_activity_asked(ask)
    _mark_event_asked(ask, lex)
    _mark_lasting(ask)
    _mark_kind_asked(ask)
    _mark_kind_word(ask, lex)
    ask.drugs_asked = bool(_ASKS_DRUGS.search(text))
    ask.superlatives = superlatives_of(text)
    ask.rule_asked = bool(_ASKS_RULE.search(text))
    if not ask.aspects and not ask.quantity and _WHAT_IS.search(text) and "定义" in lex.aspects:
        ask.aspects = ["定义"]
    if not previous:
        return ask
    # "孕妇能用吗？", "有哮喘的人能用吗？" name only whom they ask of: they ask on about the last subject, for them
    whom = _whom(text)
    own = [t for t in ask.terms if t.text not in lex.populations and not (whom and t.text in whom)]
    own_subject = _has_specific(own, lex)
    # "另外想问一下，急性泪囊炎…": another question announced, whose medical or rare words name its subject (教室采光);
    # "那肾功能不好的人还能吃吗？" goes on with the last subject, for people it names
    another = text.startswith(ANOTHER_QUESTION)
    named = any(
        (t.entity or t.text.isascii() or (another and (lex.is_medical(t.text) or _names_a_subject(t))))
        and not t.generic
        and t.text.lower() not in lex.not_subjects
        for t in ask.terms
    )  # 眼药水 of "那有没有眼药水可以改善？" is a form of treatment, not a new subject
    if marker == "switch" and not named:
        marker = "refer"  # 那每天要戴多久？ names no new subject: it asks on about the last one
    if _short(text) and question.strip().rstrip(TRAILING).endswith("呢"):
        # 双眼的呢？ — the last question, narrowed; HAL的呢？ — the last question, of a subject it names
        marker = marker or ("switch" if named and own_subject else "refer")
    if _short(text) and (contrasted := _contrasted(ask, previous, lex)) is not None:
        return contrasted
    dropped = _short(text) and bool(tokens) and tokens[0] in MODAL_OPENINGS  # "会影响视力吗？": no subject written
    if marker == "refer" or dropped or (not own_subject and (marker or ask.aspects or _short(text))):
        before = analyse(previous[-1], previous[:-1], lex)
        _inherit_subject(ask, before, text, lex)
    elif marker == "switch" and own_subject and not ask.aspects and _asks_as_before(question, text, lex):
        # 那HAL呢？ the same question of a new subject (not "另外想问一下，急性泪囊炎能不能冲洗？", a question of
        # its own)
        before = analyse(previous[-1], previous[:-1], lex)
        ask.aspects, ask.cues, ask.follow_up = list(before.aspects), list(before.cues), True
        ask.quantity = ask.quantity or before.quantity
        ask.terms += _asked_of_before(before, ask)
    else:
        before = analyse(previous[-1], previous[:-1], lex)
        context = _context_of(ask, before)
        # 眼药水 of "有哪些眼药水可以先点着？" is a form of treatment, which names no subject of its own
        own = [t for t in ask.subjects if _names_a_subject(t) and t.text.lower() not in lex.not_subjects] or [
            t for t in ask.terms if _names_a_subject(t) and t.text.lower() not in lex.not_subjects
        ]
        # "一般会持续多久？" after 屈光手术后干眼 names nothing of its own; "加巴喷丁一天用多少？" after PHN's drugs
        # names what the library writes of with PHN: both go on in the last question's setting, searched with it.
        # "补充维生素D有用吗？" after 红光治疗 is a new question: the setting is only weighed, never searched.
        # "那平时多久要查一次糖化？" after 糖尿病: opening on 那, the asker goes on in the same setting
        goes_on = bool(tokens) and tokens[0] in GOING_ON
        # "另外想问一下，急性泪囊炎…" announces a question of its own: its subject stands alone even where the library
        # never names it (not "另外，孕妇能用吗？", which names only whom it asks of)
        announced = another and any(t.text not in lex.populations for t in own)
        if context and own and all(t.told for t in own) and (ask.aspects or ask.quantity):
            # "那真近视了用上，一般会有哪些副作用？": its own subject only says when; what is asked of is the last one's
            _inherit_subject(ask, before, text, lex)
        elif context and (not own or goes_on or (together and not announced and together(own, context))):
            ask.terms = [*context, *ask.terms]
            ask.follow_up = True
            ask.resolved = _topic_of(before) + _strip_markers(text, lex)
        else:
            ask.setting = context
    return ask


def _diopters_named(ask: Ask) -> None:
    """ "远视300度": the asker's 度 of a lens or an eye's error is a hundredth of the dioptre a text writes
    ("+3.00D")."""
    if not _REFRACTIVE.search(ask.resolved):
        return
    for said in _DEGREES.finditer(ask.resolved):
        value = int(said.group(1))
        dioptres = [f"{value / 100:.2f}", f"{value / 100:.1f}"] if value % DEGREE_STEP == 0 else []
        for term in ask.terms:
            if term.text == said.group(1):
                term.variants += [d for d in dioptres if d not in term.variants]


DEGREE_STEP = 25  # lenses come in quarter dioptres: 25度 steps
_DEGREES = re.compile(r"(?<![\d.])(\d{2,4})度")
_REFRACTIVE = re.compile("近视|远视|散光|老花|屈光|镜片|眼镜|度数")


def places_in_time(term: Term) -> bool:
    """术前、术后、平时: a time word (jieba's `t`) placing the question before, after, during or at something, not a
    stage of a disease (早期) nor a verb jieba tags so (上来 of "视力上来了"): when the question is placed, never what
    it is about ("术前风险评估" of a corneal graft asks of the graft)."""
    return term.text.endswith(_WHEN_ENDINGS) and get_tokenizer().is_time_word(term.text)


_WHEN_ENDINGS = ("前", "后", "中", "时")


def _drop_who_asked(ask: Ask, text: str) -> None:
    """ "哪些人是禁用的", "什么人不适合做": with an aspect that says who (禁忌证、适应证), 人 after the asking word is
    that "who", no subject of its own; the drug or procedure asked about (the sentence before names it) stays the
    subject. Otherwise ("哪些人容易得": 好发人群), 人 is what is asked."""
    if set(ask.aspects) & _SAYS_WHO and _ASKING_WHO.search(text):
        ask.terms = [t for t in ask.terms if t.text != "人"]


_SAYS_WHO = {"禁忌证", "适应证"}  # aspects that are a "who may / may not"
_ASKING_WHO = re.compile("(?:哪些|什么|哪类|哪种|哪一类|哪一种|啥|哪个)人(?![群员士])")


def _counts_or_bounds(tokens: list[str], index: int, lex: Lexicon) -> bool:
    """A classifier after a demonstrative or numeral ("那张", "这副"), or 内 closing the time asked ("多久内")."""
    token, before = tokens[index], tokens[index - 1] if index else ""
    if token in CLASSIFIERS and before in POINTING:
        return True
    if len(token) == 2 and token[0] in (POINTING - {"一", "两", "几"}) | WHOLE and token[1] in CLASSIFIERS | {"块"}:
        return True  # jieba's 这张: a demonstrative with its classifier; 整片 of "发展成整片脱离": how much of it
    return token == WITHIN and (before in lex.quantity_words or bool(_ASKS_NUMBER.match(before)))


def _asks_validity(tokens: list[str], index: int, lex: Lexicon) -> bool:
    """ "开出来以后多长时间内有效": 有效 within the time asked says how long a thing stays valid ("点多久有效" asks
    when a treatment starts to work)."""
    if index < 2 or tokens[index - 1] != WITHIN:
        return False
    return tokens[index - 2] in lex.quantity_words or bool(_ASKS_NUMBER.match(tokens[index - 2]))


def _caught(tokens: list[str], index: int) -> bool:
    """ "怎么感染上的", "咋染上的": how one came to catch it, which a case tells ("经常戴着隐形眼镜游泳")."""
    return tokens[index] in CAUGHT_VERBS and tokens[index + 1 : index + 3] == ["上", "的"]


def _asks_what_caused(tokens: list[str], index: int) -> bool:
    """ "是啥引起的", "由什么造成", "怎么得的": a verb of causing (or of coming to have) after a word asking what."""
    token = tokens[index]
    got = token in GOT_VERBS and tokens[index + 1 : index + 2] == ["的"]
    if token not in CAUSING and not got and not _caught(tokens, index):
        return False
    before = [t for t in tokens[:index] if t not in CAUSE_BETWEEN]
    if _caught(tokens, index):  # "怎么戴镜才感染上的": how, however the clause goes on before it
        return bool({"怎么", "咋"} & set(before))
    return bool(before) and before[-1] in CAUSE_WHAT and (token in CAUSING or before[-1] in {"怎么", "咋"})


def superlatives_of(text: str) -> list[str]:
    """The degrees a question asks the most of ("最常见的并发症" → ["常见"])."""
    return list(dict.fromkeys(m.group(1) for m in _SUPERLATIVE.finditer(text)))


def _contrasted(ask: Ask, previous: list[str], lex: Lexicon) -> Ask | None:
    """ "那轻度呢？" after "近视多少度算高度近视？": the one word asked takes the place of the part of the last subject
    it contrasts with (same length, same ending: 高度 → 轻度, 急性 → 慢性, 开角型 → 闭角型), and the last question is
    asked again of the subject so made (轻度近视), not of 轻度 alone nor of 高度近视."""
    own = [t for t in ask.terms if not t.generic]
    if len(own) != 1 or ask.aspects or ask.quantity:
        return None
    word, last = own[0].text, previous[-1]
    subject = analyse(last, previous[:-1], lex).subject
    if not subject or word in subject:
        return None
    for size in range(2, len(subject) - 1):
        if _contrasts(subject[:size], word) and subject in last:
            again = analyse(last.replace(subject, word + subject[size:]), previous[:-1], lex)
            again.question, again.follow_up = ask.question, True
            return again
    return None


def split_questions(message: str) -> list[str]:
    """The questions of one message, each with the story told before it: "…医生说是霰粒肿。要不要点抗生素眼药水？它和
    针眼到底有啥区别？" asks two. What follows the last question mark and asks nothing ("家长担心越戴度数越深。"), or
    only checks the one before ("对吗？"), belongs to the question before it."""
    questions: list[str] = []
    for piece in _QUESTION_END.split(message.strip()):
        content = piece.strip().rstrip(TRAILING).strip(TRAILING)
        asks = piece.rstrip().endswith(("？", "?")) or _ASKING_CLAUSE.search(piece)
        if questions and (not asks or len(content.rstrip("吗呢吧么")) <= TAG_QUESTION_CHARS):
            questions[-1] += piece
        elif content:
            questions.append(piece)
    return questions or [message]


POINTING_AT_ONE = ("那个", "这个")  # "卫健委那个指南": one thing of the body or place named before it
_BODY_ENDINGS = ("部", "局", "委", "署", "厅", "办", "政府", "中心")  # 教育部、药监局、卫健委、国健署、卫生厅


def _owner_name(word: str) -> bool:
    """A public body (教育部、药监局、卫健委、衞生署) or a place (宜兰、香港): what it issues or runs is asked of."""
    return (len(word) >= 2 and word.endswith(_BODY_ENDINGS)) or get_tokenizer().is_place(word)


# "…和软镜比", "跟框架眼镜相比": the second of two things compared, the one the first is measured against
_MEASURED_AGAINST = re.compile(r"(?:和|跟|与|同)([^，,。；;？?！!和跟与同]{1,12}?)(?:相比|比起来|比较|比)")


def _references(text: str) -> set[str]:
    return {m.group(1) for m in _MEASURED_AGAINST.finditer(text)}


def _names_a_subject(term: Term) -> bool:
    """A word that says what a question is about on its own: a domain term, an abbreviation, or a word rare in
    general Chinese (维生素D、护目镜); not an everyday one (材料、持续、手术本身)."""
    if term.generic:
        return False
    return term.entity or _abbreviation(term.text) or get_tokenizer().general_rarity(term.text) >= NAMING_RARITY


def _context_of(ask: Ask, before: Ask) -> list[Term]:
    """A question in a chat goes on in the previous one's setting: that subject, as context — weighed where a passage
    names it, never required, for the question may still be about something new (纤维肌痛's 诊断标准 after a
    question on 阿片类药物)."""
    own = {t.text for t in ask.terms}
    named = [t for t in before.subjects if _names_a_subject(t)]  # 激素眼药水 of "长期用激素眼药水会引起…", not 长期
    # 眼底 of "刚做完眼底造影…" goes on with the word written onto it: the 造影 is what the chat is about
    topic = _topic_of(before)
    phrase = compound(before, topic) if any(t.text == topic for t in named) else []
    carried = [*phrase, *(t for t in named if t not in phrase)]
    return [
        Term(t.text, t.variants, t.entity, t.generic, inherited=True, context=True)
        for t in carried
        if t.text not in own
    ]


def _inherit_subject(ask: Ask, before: Ask, text: str, lex: Lexicon) -> None:
    """它/其/这种…, or no subject of its own (那副作用呢？): the previous question's subject is this one's too."""
    # The previous subject (角膜塑形镜 of "哪些孩子不适合验配角膜塑形镜") with the words written onto it (人工晶体闪辉,
    # 先天性白内障), or both of "A和B"; not its other words (老人的睡眠 of "…会不会影响老人的睡眠").
    topic = _topic_of(before)
    named = _joined_subjects(before) or compound(before, topic)
    own = {t.text for t in ask.terms}
    # 双眼的呢？ after 单眼弱视…: the new word takes the place of the one it contrasts with (same kind, same ending)
    # …not a verb: the 去查 of "第一次什么时候去查" is going for it, no other kind of the 筛查 before
    verb = get_tokenizer().is_verb
    named = [t for t in named if t.text == topic or not any(_contrasts(t.text, o) for o in own if not verb(o))]
    inherited = [Term(t.text, t.variants, t.entity, t.generic, inherited=True) for t in named]
    if not inherited:
        return
    if _name_kinds(ask, topic, lex):
        inherited = [t for t in inherited if t.text != topic]  # 假性近视 and 真性近视, not 近视 as well
    ask.terms = [*[t for t in inherited if t.text not in own], *ask.terms]
    ask.follow_up = True
    ask.resolved = topic + _strip_markers(text, lex)
    # "它和麦粒肿有啥区别？": the last subject, joined to the one this question names
    ask.joined = ask.joined or (bool(_JOINED_TO_IT.match(text.strip())) and len(ask.subjects) >= 2)
    own_ask = ask.aspects or ask.quantity or any(not t.inherited and not t.generic for t in ask.terms)
    asks_on = (  # 双眼的呢？ narrows the last question; 万一已经伤到了呢？ asks something new
        ask.question.strip().rstrip(TRAILING).endswith("呢")
        and not (ask.aspects or ask.quantity)
        and all(_nominal(t) for t in ask.terms if not t.inherited)
    )
    if not own_ask or asks_on:  # 停药后呢？ 双眼的呢？ ask what the last one asked
        ask.aspects, ask.cues = list(before.aspects), list(before.cues)
        ask.quantity = ask.quantity or before.quantity


def _name_kinds(ask: Ask, topic: str, lex: Lexicon) -> list[Term]:
    """ "那假性跟真性要怎么分？" after a question on 近视: a qualifier the follow-up names is a kind of the last subject
    (假性近视、真性近视), which is what a text writes."""
    kinds = []
    for term in ask.terms:
        kind = term.text + topic
        if not term.entity and not term.inherited and _QUALIFIER.fullmatch(term.text) and lex.is_entity(kind):
            term.text, term.variants, term.entity = kind, lex.variants(kind), True
            kinds.append(term)
    if len(kinds) >= 2 and not ask.joined:
        ask.joined, ask.compared = True, [[kind] for kind in kinds]  # 假性跟真性: the two kinds joined
    return kinds


_QUALIFIER = re.compile(r"[\u4e00-\u9fff]{1,3}[性型]")


def _joined_subjects(before: Ask) -> list[Term]:
    """ "全飞秒和ICL有什么区别？": both sides are what a follow-up goes on with; where the two joined are what another
    subject acts on ("ICL最高能矫正多少度近视和散光？": 它 is ICL), the subjects besides them."""
    if not before.joined:
        return []
    outside = [t for t in before.subjects if t.text not in _sides(before)]
    if _sides(before) and any(t.entity for t in outside):
        return outside
    return before.subjects


def _sides(before: Ask) -> set[str]:
    return {t.text for side in before.compared for t in side}


def _topic_of(before: Ask) -> str:
    """The subject a follow-up goes on with: of two questions asked at once, each naming a subject ("OK镜适合多少度的
    孩子？角膜曲率有要求吗？"), the first one's — the second asks on about it; else the most specific subject."""
    if before.joined and (outside := [t for t in before.subjects if t.text not in _sides(before) and t.entity]):
        return max(outside, key=lambda t: (t.entity, len(t.text))).text  # ICL of "ICL…矫正…近视和散光"
    asked = [m.group() for m in _ASKED_SENTENCE.finditer(before.question)]
    if len(asked) < 2:
        return before.subject
    first = [t for t in before.subjects if t.text in asked[0]]
    if not first or before.subject in asked[0] or not any(t.text in " ".join(asked[1:]) for t in before.subjects):
        return before.subject
    return max(first, key=lambda t: (t.entity, len(t.text))).text


_ASKED_SENTENCE = re.compile(r"[^？?。！!]+[？?]")


def _mark_quoted(ask: Ask, question: str, lex: Lexicon) -> None:
    """Words in quotes are the text's own (四个“不要”): a term however common, even a function word."""
    for quoted in _QUOTED.findall(question):
        quoted = quoted.strip()
        if len(quoted) < 2 or len(quoted) > MAX_QUOTED_CHARS:  # “的” is no word to find; a long quote no word at all
            continue
        if quoted in lex.generic or quoted in lex.function_words:  # “儿童”、“需要”: quoted or not, no topic
            continue
        term = next((t for t in ask.terms if t.text == quoted), None)
        if term is None:
            term = Term(quoted, lex.variants(quoted), entity=lex.is_entity(quoted))
            ask.terms.append(term)
        term.quoted = True


def _mark_parenthesised(ask: Ask) -> None:
    """ "泪膜破裂时间（BUT）", "半边脸抽搐（面肌痉挛）": the asker gives a second name in brackets right after the
    first. A text naming either one names what is asked (the same alternative as "A或B")."""
    placed = _placed(ask)
    for bracket in _BRACKETED.finditer(ask.resolved):
        named = [term for _, end, term in placed if end == bracket.start()]
        inside = [term for start, end, term in placed if bracket.start() < start and end < bracket.end()]
        for term in inside if named else []:
            term.either = term.either or named[0].text
            term.glossed = named[0].glossed = True


def _mark_class_named(ask: Ask) -> None:
    """ "点必舒这类激素加抗生素的眼药长期用…": the asker names a product, then the kind it is of; a text naming either
    names what is asked (the kind is what the product is, not a second thing asked about)."""
    placed = _placed(ask)
    for said in _OF_THIS_KIND.finditer(ask.resolved):
        named = [term for _, end, term in placed if end == said.start()]
        stop = re.search(r"的|[，,。；;？?！!]|$", ask.resolved[said.end() :])
        kind_end = said.end() + (stop.start() if stop else 0)
        inside = [term for start, end, term in placed if said.end() <= start and end <= kind_end]
        for term in inside if named else []:
            term.either = term.either or named[0].text
            term.glossed = named[0].glossed = True


def _mark_scene(ask: Ask, lex: Lexicon) -> None:
    """Everyday words written only in the clauses that set the scene before the one that asks ("戴隐形眼镜偶尔懒得摘就
    睡了，得角膜感染的风险会大多少？": 偶尔、懒得、摘): the asker's story, which a text tells in its own words if at
    all. A subject is never scene: a domain term, an abbreviation, a quoted word, a population, or medical wording
    (`Lexicon.is_medical`: 后巩膜加固术 in "听说有个后巩膜加固术，能不能…"); the story's household nouns (铁屑、麦秆
    of "砸钉子的时候有铁屑崩进眼睛里了，…") are scene however rare."""
    text = ask.resolved
    clauses, asking = _clauses(text)
    if len(asking) == len(clauses):
        return
    for term in ask.terms:
        places = [m.start() for m in re.finditer(re.escape(term.text), text)]
        if not places or any(a <= at < b for at in places for a, b in asking):
            continue
        term.told = True
        if term.entity or term.quoted or term.context or _abbreviation(term.text) or term.text in lex.populations:
            continue  # 儿童 of "儿童…用加巴喷丁，起始剂量…": whom it is asked of
        if _coined_name(term.text):
            continue  # "宜可利除了严重干眼，还有什么适应症": a brand the asker names first, then asks of
        if not lex.is_medical(term.text):
            term.scene = True


def _mark_instrument(ask: Ask) -> None:
    """ "能不能用纱布把眼睛包起来": what it is done with (用…把) is how the asker pictures the act; a text on whether
    the eye may be bandaged says so whatever it names the dressing. The act and its object are what is asked."""
    for used in _DONE_WITH.finditer(ask.resolved):
        for term in ask.terms:
            if term.text in used.group(1) and not (term.entity or term.quoted):
                term.scene = True


_DONE_WITH = re.compile(r"用([^，,。；;？?！!把]{1,6})把")


def _mark_where_obtained(ask: Ask) -> None:
    """ "能不能自己去药店买X来点": where the asker would get it (去…买, 到…配) is how they picture getting it; a text on
    whether X may be used without a doctor says so whatever it calls the shop. X and its use are what is asked."""
    for obtained in _OBTAINED_AT.finditer(ask.resolved):
        for term in ask.terms:
            if term.text in obtained.group(0) and not (term.entity or term.quoted):
                term.scene = True  # the shop and the buying: 药店, 买


_OBTAINED_AT = re.compile(r"(?:去|到)[^，,。；;？?！!买配拿]{1,4}(?:买|配|拿)")


def _pictured(word: str, text: str) -> bool:
    """How the asker pictures it: a vivid adjective (黏糊糊) or what it is done with (用纱布把…)."""
    return bool(_VIVID.fullmatch(word)) or any(word in used.group(1) for used in _DONE_WITH.finditer(text))


def _mark_when(ask: Ask) -> None:
    """ "入院时左右眼眼压分别是多少": an event a "时" follows says when what is asked was measured or done, which a text
    gives under its own words for the time (入院检查) or none — told, not asked. A domain term stays asked
    (戴OK镜时 is of the lens)."""
    for term in ask.terms:
        if term.entity or term.quoted or term.told or len(term.text) < 2:
            continue
        if re.search(rf"{re.escape(term.text)}(?:时|的时候)(?!间)", ask.resolved):
            term.told = True
        elif term.text in VISIT_EVENTS and re.search(term.text + PLACING_AFTER, ask.resolved):
            term.told = True  # "住院前还照常用吗": when, in a notice's own words (入院前须知), not what is asked of


def _mark_activity_asked(ask: Ask) -> None:
    """ "术后多久可以游泳？": the time asked is the time one may do something, and that something is the point."""
    found = _WHEN_ALLOWED.search(ask.resolved)
    if found is None:
        return
    for term in ask.terms:
        if len(term.text) >= 2 and found.group("act").startswith(term.text) and not term.generic:
            term.activity = True


def _mark_event_asked(ask: Ask, lex: Lexicon) -> None:
    """ "以后会不会复发？", "青光眼会不会遗传？": whether a medical event happens is asked; a text that never names it
    (复发、失明、遗传) says nothing of it, however much it says of the operation or the disease."""
    for found in _WHETHER_IT_HAPPENS.finditer(ask.resolved):
        for term in ask.terms:
            if len(term.text) >= 2 and found.group("event").startswith(term.text) and lex.is_medical(term.text):
                term.activity = True


# "会否复发", "是否会失明", "会不会遗传": the event at the end of its clause (会否 is how 会不会 is read)
_WHETHER_IT_HAPPENS = re.compile(
    r"(?:会否|是否会|会不会)(?:再|又)?(?P<event>[\u4e00-\u9fff]{2,3}?)(?:吗|呢)?(?=[？?，,。；;！!]|$)"
)


def _mark_lasting(ask: Ask) -> None:
    """ "术后要趴着保持多少天？", "视物模糊要持续多久？": how long something is kept up or lasts is asked; that
    something is the point, and the time answering is written with it ("术后俯卧位7天"), not with another thing of
    the same passage ("术后一级护理1至2天")."""
    if ask.quantity != "时间":
        return
    found = _LASTING.search(ask.resolved)
    if found is None:
        return
    before = found.group("before")
    term = next((t for t in reversed(ask.terms) if len(t.text) >= 2 and before.endswith(t.text)), None)
    if term is not None and not (term.generic or term.told or term.entity):
        term.activity = True
        ask.lasting = term.text


# what is kept up, a verb of keeping it and a modal between it and the time asked: "要趴着保持多少天"
_LASTING = re.compile(
    r"(?P<before>[\u4e00-\u9fffA-Za-z]{2,}?)(?:要|需要|得|会)?(?:保持|持续|坚持|维持)(?:多少天|几天|多久|多长时间|几周|几个月|几小时|几个小时|几分钟)"
)


PROHIBITIONS = {"不能", "不可以", "不可", "不要", "不宜", "不让", "禁止"}
# the span a restriction lasts, asked: "几天之内不能洗脸", "多久不要揉眼", "多长时间内不宜游泳"
_WHILE_NOT = re.compile(
    r"(?:多久|多长时间|几天|几周|几个星期|几个月|多少天)(?:之内|以内|内)?(?:都|还|也)?(?:不能|不可以|不可|不要|不宜|不让|禁止)"
)

_WHEN_ALLOWED = re.compile(
    r"(?:多久|多长时间|几天|几周|几个月|什么时候|啥时候|何时)(?:以后|之后|后)?(?:才|就)?(?:可以|能够|能|才能|可)"
    r"(?:自己|再|去|正常)?(?P<act>[\u4e00-\u9fff]{2,4})$"
)


def _mark_kind_word(ask: Ask, lex: Lexicon) -> None:
    """The noun right after 哪个/哪种/什么 (部件、国家、材料): the kind of thing asked for, not a domain term."""
    placed = _placed(ask)
    starts = {start for start, _, _ in placed}
    for start, stop, term in placed:
        before = ask.resolved[max(0, start - 3) : start]
        if stop in starts:
            continue  # "什么抗真菌眼药水": a word before another qualifies it, the kind is the last one
        named = term.entity or term.quoted or lex.is_medical(term.text) or term.text in NAMES_ASKED
        # a word of the dictionary (部件、材料): a compound the asker made up (抗真菌眼药水) names what is asked
        if _ASKING_BEFORE.search(before) and not named and get_tokenizer().knows(term.text):
            term.kind = True


_ASKING_BEFORE = re.compile(r"(?:哪个|哪种|哪类|哪一个|哪一种|哪一类|什么|啥)(?:的)?$")
# "推荐哪个品牌", "去哪家医院": a proper name is asked for, which a library that never writes the kind names nowhere
NAMES_ASKED = {
    "品牌",
    "牌子",
    "厂家",
    "厂商",
    "公司",
    "医院",
    "医生",
    "专家",
    "型号",
    "产品",
    "名字",
    "名称",
    "网站",
    "地方",
}


def _mark_kind_asked(ask: Ask) -> None:
    """ "还可能伴随哪些视觉问题？": the word between the asking word and 问题 is the kind of answer wanted, which a
    text gives as the problems themselves (视敏度下降、畏光) without naming their kind: the asker's wording. So is the
    disease asked for ("最后查出来是什么眼病？"), which a text names (白内障), never as 眼病, and the conditions asked
    for ("满足什么条件"), which it lists."""
    asked = [*_KIND_ASKED.finditer(ask.resolved), *_DISEASE_ASKED.finditer(ask.resolved)]
    for found in [*asked, *_CONDITIONS_ASKED.finditer(ask.resolved), *_ITEMS_ASKED.finditer(ask.resolved)]:
        for term in ask.terms:
            if term.text == found.group("kind") and not (term.entity or term.quoted):
                term.scene = True


_DISEASE_ASKED = re.compile(  # not 病人、病因、病史 …: no disease
    r"(?:哪些|哪种|哪类|什么|啥|何种)(?P<kind>[\u4e00-\u9fff]{1,2}(?:病|疾))(?![人变毒历房区情灶因理例号种史])"
)
# "满足什么条件才考虑开刀": the conditions for doing something, which a text lists (视力低于0.5；炎症控制以后) without
# the word 条件; not "要符合什么条件？" of a drug, which asks of its 条件 and no more
_CONDITIONS_ASKED = re.compile(r"(?:哪些|什么|啥|何种)(?P<kind>条件|情况|要求)(?:下)?(?:才|就|时)")
# "都能测出哪些指标", "包括哪些项目", "要准备什么东西": the items asked for, which a text lists (泪河高度、泪膜检查;
# 太阳眼镜或雨伞) under its own lead-in, seldom with the asker's word for what they are
_ITEMS_ASKED = re.compile(r"(?:哪些|哪几项|哪几个|哪几样|什么|啥)(?P<kind>指标|项目|内容|东西|物品|资料|证件)")
_KIND_ASKED = re.compile(r"(?:哪些|哪种|哪类|什么|啥)(?P<kind>[\u4e00-\u9fff]{2,4}?)(?:方面)?(?:的)?(?:问题|毛病|麻烦)")


def _whom(text: str) -> str:
    """What the question says of the people it asks of ("有哮喘的人", "患有糖尿病的患者"): their condition, not its
    subject."""
    return " ".join(m.group(0) for m in _WHO_HAS.finditer(text))


_WHO_HAS = re.compile(r"(?:有|患有|得了|得过|患过)([^，,；;。？?！!的]{1,8})的(?:人|患者|病人|孩子|小孩|老人|病友)")


def _mark_purpose(ask: Ask) -> None:
    """ "奥洛他定滴眼液治过敏性结膜炎发痒，一天点几次？": in a told clause, what comes after "治/用于/用来…" with a
    subject before it is what that subject is used for — the asker's setting, not what the answer must name."""
    text = ask.resolved
    clauses, asking = _clauses(text)
    for term in ask.terms:
        if not term.told or term.context or term.inherited:
            continue
        for a, b in clauses:
            at = text.find(term.text, a, b)
            if at < 0 or (a, b) in asking:
                continue
            before = text[a:at]
            verb = _FOR_USE.search(before)
            if verb and any(o is not term and text.find(o.text, a, a + verb.start()) >= 0 for o in ask.terms):
                term.purpose = True
            elif _HAS_GOT.search(before) and any(ask.names_drug(o) for o in ask.terms if o is not term):
                term.purpose = True  # "孕妇得了过敏性结膜炎，能用依匹斯汀眼药水吗？": what the drug would be for
            elif _USED_FOR.match(text, at + len(term.text), b) and any(
                ask.names_drug(o) and text.find(o.text, at + len(term.text), b) >= 0 for o in ask.terms
            ):
                term.purpose = True  # "散瞳验光用的阿托品眼用凝胶，开封以后…": what the drug named after is used for
            elif (wants := _WANTS_TREATMENT.match(text, at + len(term.text), b)) and any(
                o is not term and text.find(o.text, wants.end(), b) >= 0 for o in ask.terms
            ):
                # "急性青光眼想用甘露醇降眼压，哪些人不能用？", "甲亢突眼想做眼科手术，TSAb降到多少…": the condition a
                # treatment is wanted for sets the scene; what is asked is of the treatment or of the clause after
                term.purpose = True


def _mark_felt_after_use(ask: Ask, lex: Lexicon) -> None:
    """ "那点完眼睛可能会有啥不舒服？", "吃了这个药会难受吗？": what one may feel after using a medicine is its adverse
    reactions, however the asker words the feeling and the use; the drug named is kept (用了阿托品以后有什么不适)."""
    found = _FELT_AFTER_USE.search(ask.resolved)
    if found is None or "不良反应" not in lex.aspects:
        return
    # "点完眼睛…不舒服": the feeling is no word a monograph writes; the use (点完眼睛) only ranks what is said of it
    ask.terms = [t for t in ask.terms if t.text not in found.group("felt")]
    for term in ask.terms:
        if term.text in found.group(0) and not (term.entity or term.inherited or term.context or ask.names_drug(term)):
            term.scene = True
    _add_cue(ask, "不良反应", lex)


def _mark_nature_asked(ask: Ask, lex: Lexicon) -> None:
    """ "医生说是霰粒肿，这是细菌感染吗？", "是不是病毒感染引起的？": whether a condition is an infection asks what
    causes it, not the risk of one (the 感染 of "做完会感染吗")."""
    if "原因" not in lex.aspects or not _IS_IT_INFECTION.search(ask.resolved):
        return
    risk = lex.aspect_of("感染")
    if risk in ask.aspects and not any(lex.aspect_of(c) == risk for c in ask.cues if c != "感染"):
        ask.aspects.remove(risk)
    _add_cue(ask, "病因", lex)


_IS_IT_INFECTION = re.compile(
    r"(?:是|属于|算)(?:不是)?[^，,；;。？?！!]{0,6}感染(?:引起|导致|造成)?的?(?:吗|么|嘛|呢|$)"
)


# a medicine's verbs (not 戴、做: "戴完OK镜眼睛不舒服" is a symptom to explain, not a drug's adverse reaction)
_FELT_AFTER_USE = re.compile(
    r"(?:用|点|滴|吃|服|涂|抹|喷|打)(?:完|了|上|过)?[^，,；;。？?！!]{0,6}?(?:完|以后|之后|后|了)"
    r"[^，,；;。？?！!]{0,8}?(?P<felt>不舒服|难受|不适|反应)"
)


_WANTS_TREATMENT = re.compile(
    r"(?:的?(?:患者|病人|病友|的人|孩子|小孩))?(?:想|要|准备|打算|需要|计划)(?:用|做|点|吃|打|配|上|接受|进行)"
)
_FOR_USE = re.compile(r"(?:治疗|治|用于|用来|用在|对付|缓解|降低|降|控制)[^，,；;。？?！!]{0,2}$")
# "点了多久没效果要去医院", "用了几天不见好该去就诊": when to seek care if a treatment does not work
_SEE_A_DOCTOR_WHEN_NO_EFFECT = re.compile(
    r"(?:没|没有|不|无|不见)(?:效果|见效|效|见好|好转|缓解|改善)[^，,。？?]{0,6}(?:去|到|上)?(?:医院|就医|就诊|看医生|复诊|看病)"
)
_PER_DAY = r"(?:一天|每天|一日|每日|天天)"
_TIMES = r"(?:[一二两三四五六七八九十]|\d{1,2})\s*(?:次|回)"
# "能不能一天点两次", "一天能点两次吗", "每天滴三次可以吗": the asker puts a frequency to the text, asking if it may be
_FREQUENCY_PUT = re.compile(
    rf"(?:能|可以|可否|行)[^，,。？?]{{0,8}}{_PER_DAY}[^，,。？?\d]{{0,3}}{_TIMES}"
    rf"|{_PER_DAY}(?:能|可以|可否)[^，,。？?\d]{{0,3}}{_TIMES}"
    rf"|{_PER_DAY}[^，,。？?\d]{{0,3}}{_TIMES}[^，,。？?]{{0,4}}(?:可以|行|能|可否)"
)
_OF_THIS_KIND = re.compile(r"(?:这类|这种|这一类|这样的)")  # "点必舒这类激素加抗生素的眼药"
_USED_FOR = re.compile(r"(?:时|时候)?(?:所)?(?:用的|使用的|点的|滴的)")  # "验光用的阿托品": what it is used for
_HAS_GOT = re.compile(r"(?:得了|患了|患有|得的是|查出)[^，,；;。？?！!]{0,2}$")


def _clauses(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The clauses of a question (start, end) and those of them that ask: the last one, and any with a question
    word of its own."""
    bounds = [0, *(m.end() for m in _CLAUSE_END.finditer(text)), len(text)]
    clauses = [(a, b) for a, b in pairwise(bounds) if text[a:b].strip(TRAILING)]
    asking = [(a, b) for i, (a, b) in enumerate(clauses) if i == len(clauses) - 1 or _ASKING_CLAUSE.search(text[a:b])]
    return clauses, asking


def _negation_told(ask: Ask, lex: Lexicon) -> None:
    """ "病人闭不上眼、不能眨眼，要考虑哪些病？", "孩子不适合戴OK镜，还有什么办法？": a 不能 of the story told before
    the clause that asks is what the patient cannot do, not a question about contraindications — when the asking
    clause asks something of its own (not "…的禁忌，有哪些？")."""
    text = ask.resolved
    negations = [c for c in ask.cues if lex.aspect_of(c) == CONTRAINDICATION and c.startswith("不")]
    clauses, asking = _clauses(text)
    if not negations or len(asking) == len(clauses):
        return

    def asked(at: int) -> bool:
        return any(a <= at < b for a, b in asking)

    def story(at: int) -> bool:  # not "不适合戴OK镜的，是哪些孩子？", whose told clause names who is asked of
        return not asked(at) and not any(a <= at < b and text[a:b].rstrip(TRAILING).endswith("的") for a, b in clauses)

    told = [c for c in negations if (places := _places(c, text)) and all(map(story, places))]
    others = [c for c in ask.cues if c not in told]
    own = [t for t in ask.terms if any(map(asked, _places(t.text, text)))]  # 哪些病: even a generic word
    if not told or not (own or ask.quantity or any(any(map(asked, _places(c, text))) for c in others)):
        return
    ask.cues = others
    if not any(lex.aspect_of(c) == CONTRAINDICATION for c in others):
        ask.aspects = [a for a in ask.aspects if a != CONTRAINDICATION]


_UNDONE = ("没有", "没去", "没再", "没", "未", "从没", "一直没")  # "半年没去复查": what the asker did not do


def _undone_told(ask: Ask, lex: Lexicon) -> None:
    """ "配了眼镜后半年没去复查，再一查度数怎么样了？": an aspect's word the story says was not done (没去复查) tells
    what happened, it does not ask for follow-up visits — when the asking clause asks something of its own."""
    text = ask.resolved
    clauses, asking = _clauses(text)
    if len(asking) == len(clauses):
        return

    def undone(cue: str) -> bool:
        places = _places(cue, text)
        return bool(places) and all(
            not any(a <= at < b for a, b in asking) and text[max(0, at - 3) : at].endswith(_UNDONE) for at in places
        )

    told = [c for c in ask.cues if lex.aspect_of(c) not in lex.free_aspects and undone(c)]
    own = [t for t in ask.terms if any(any(a <= at < b for a, b in asking) for at in _places(t.text, text))]
    if not told or not (own or ask.quantity):
        return
    ask.cues = [c for c in ask.cues if c not in told]
    kept = {lex.aspect_of(c) for c in ask.cues}
    ask.aspects = [a for a in ask.aspects if a in kept or a not in {lex.aspect_of(c) for c in told}]


def _places(word: str, text: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(word), text)]


def _counted(text: str, word: str) -> bool:
    """ "还有个小脓头": a thing counted (个) is something the asker sees, not a product's name."""
    return f"个{word}" in text


def _proper_name(term: Term) -> bool:
    """A name the asker glosses in brackets ("威尔眸（Vigamox）") or coins no dictionary word makes (宜可利)."""
    return (term.glossed and not term.entity) or _coined_name(term.text)


def _coined_name(word: str) -> bool:
    """Three Chinese characters or more that no dictionary word is made of: a product's or a person's name (宜可利、
    可乐必妥), never an everyday word of the asker's story."""
    return len(word) >= 3 and bool(re.fullmatch(r"[\u4e00-\u9fff]+", word)) and get_tokenizer().is_coinage(word)


# "我眼角长的翼状胬肉": the asker's own case, told in a clause before the 的 of what it is; "急性泪囊炎那种红肿疼的":
# what the named thing is like, as the asker sees it
_OWN_CASE = re.compile(r"(?:我|俺|咱)[^，,；;。？?！!的]{1,8}的")
_AS_SEEN = re.compile(r"(?:那种|这种|那样|这样)[^，,；;。？?！!的]{1,8}的")
# "中医说的暴盲", "书上讲的飞蚊症": who calls it so, not what is asked about
_REPORTED = re.compile(r"(?:^|(?<=[，,；;。？?！!\s]))([^，,；;。？?！!的\s]{1,6}?)(?:所说|说|讲|叫|称)的")
# "照那家眼镜店视光师的经验，…", "按眼镜店的说法": whose word the asker goes by, not what is asked about
_ACCORDING_TO = re.compile(
    r"(?:^|(?<=[，,；;。？?！!\s]))(?:按照|依照|根据|照|按|依|据)([^，,；;。？?！!的\s]{1,12}?)的"
    r"(?:经验|说法|讲法|意见|介绍|观点|看法|解释|建议)"
)


def _mark_described(ask: Ask, lex: Lexicon) -> None:
    """Words describing a named domain term in the asker's own way (where it grows on them, what it looks like)
    are scene: the question asks of the term (翼状胬肉 … 做手术), and a text answering it need not repeat how
    this asker's case looks (眼角、红肿). Only where a domain term or medical wording is what the clause describes."""
    text = ask.resolved
    placed = _placed(ask)
    entities = [(start, end) for start, end, term in placed if term.entity or lex.is_medical(term.text)]
    for pattern, side in ((_OWN_CASE, "after"), (_AS_SEEN, "before")):
        for m in pattern.finditer(text):
            if side == "after":
                described = any(start == m.end() for start, _ in entities)
            else:
                described = any(end == m.start() for _, end in entities)
            if not described:
                continue
            for start, end, term in placed:
                if m.start() <= start and end <= m.end() - 1 and not (term.entity or term.quoted or term.context):
                    term.scene = term.told = True
    for m in [*_REPORTED.finditer(text), *_ACCORDING_TO.finditer(text)]:
        for start, end, term in placed:
            if m.start(1) <= start and end <= m.end(1) and not term.quoted:
                term.scene = term.told = True


def _mark_adverbs(ask: Ask, lex: Lexicon) -> None:
    """The asker's adverbs (偶尔戴着睡一觉、赶紧去配、一直流泪) say how they tell it; a text answering says it its own
    way or not at all. Scene words: they rank a passage that has them, and no passage is missed for lacking them."""
    tokenizer = get_tokenizer()
    for term in ask.terms:
        described = term.entity or term.quoted or lex.is_medical(term.text)
        if len(term.text) >= 2 and not described and tokenizer.is_adverb(term.text):
            term.scene = True
        if not described and _VIVID.fullmatch(term.text):
            term.scene = True  # "黏糊糊的黏液", "红彤彤的": how the asker sees it, which no text writes so
        if ask.quantity and term.text in NUMBER_BOUNDS:
            term.scene = True  # "最晚要提前多久": the bound put on the number asked, which a text gives as the number


_VIVID = re.compile(r"[\u4e00-\u9fff]([\u4e00-\u9fff])\1")  # an adjective with a doubled ending: 黏糊糊、湿漉漉


def _mark_modifiers(ask: Ask) -> None:
    """Terms followed by 的 and another term of the question: "手术显微镜的脚踏" asks about a 脚踏."""
    for left, right in zip(ask.terms, ask.terms[1:]):
        if f"{left.text}的{right.text}" in ask.resolved and not right.generic:
            left.modifier = True


def compound(ask: Ask, subject: str) -> list[Term]:
    """The subject and the terms written onto it without a break (a gloss in brackets included): the noun phrase
    it heads or modifies — 人工晶体 + 闪辉 (glistening), 蓝光滤过型 + 人工晶体."""
    text = ask.resolved
    placed = _placed(ask)
    index = next((i for i, (_, _, t) in enumerate(placed) if t.text == subject), None)
    if index is None:
        return [t for t in ask.terms if t.text == subject]
    # A word placing in time ends the phrase: "白内障超乳术后眼睛前房积了血" is 白内障超乳 after the operation, then
    # what happened to the eye — 眼睛前房 is the case told, not the subject
    tokenizer = get_tokenizer()
    first = last = index
    while first > 0 and _joined(text, placed[first - 1], placed[first]):
        first -= 1
        if tokenizer.is_time_word(placed[first][2].text):
            break
    while last + 1 < len(placed) and _joined(text, placed[last], placed[last + 1]):
        last += 1
        if tokenizer.is_time_word(placed[last][2].text):
            break
    return [t for _, _, t in placed[first : last + 1] if not t.generic]


def _joined(text: str, left, right) -> bool:
    gap = text[left[1] : right[0]]
    # 新生儿眼病筛查: an action named as a thing ends the noun phrase it follows
    heads = _nominal(right[2]) or (not right[2].generic and get_tokenizer().is_verbal_noun(right[2].text))
    # "胰岛素住院前": a visit placing the question in time (`VISIT_EVENTS`) is no word of the noun before it
    placing = right[2].text in VISIT_EVENTS and re.match(PLACING_AFTER, text[right[1] :]) is not None
    return gap.strip(" （(") == "" and _nominal(left[2]) and heads and not placing


def _nominal(term: Term) -> bool:
    """A term that can be part of a noun phrase: a domain term, an abbreviation, a noun (验配 in 验配角膜塑形镜 is
    the verb before its object)."""
    if term.generic:
        return False
    return term.entity or term.text.isascii() or get_tokenizer().is_noun(term.text)


def _contrasts(inherited: str, own: str) -> bool:
    return inherited != own and len(inherited) == len(own) and inherited[-1] == own[-1] and not own.isascii()


def _instils(tokens: list[str], index: int) -> bool:
    """ "一天点几次", "每次点两滴": 点 here is putting drops in, which a text writes as 滴 ("一次2~3滴")."""
    if tokens[index] != INSTIL_SAID:
        return False
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    if _COUNTED_AFTER.match(after) or (index > 0 and tokens[index - 1] in _HOW_OFTEN):
        return True
    lex = get_lexicon()  # "有哪些眼药水可以先点着": with the drops named, 点 is putting them in
    return any(EYE_DROPS in lex.variants(token) for token in tokens)


def _softens(tokens: list[str], index: int, lex: Lexicon) -> bool:
    """ "注意点啥", "小心点儿": 点 after the verb asked and before 啥/什么/儿 (or at the end) is 一点, a softener."""
    if tokens[index] != INSTIL_SAID or index == 0:
        return False
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    return tokens[index - 1] in lex.ask_cues and after in _SOFTENED_ASKS


_SOFTENED_ASKS = {"", "啥", "什么", "儿", "呢", "吧"}
STILL = "还是"  # "A还是B？" offers a choice; "还是模糊，…" says a state goes on


def _says_still(ask: Ask, tokens: list[str], index: int) -> bool:
    """还是 before a word that is no thing ("还是模糊", "还是不行"), in a clause another one follows that is not
    closed by "？": the asker says how things still are, and asks in a clause of its own."""
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    if not after or get_tokenizer().is_noun(after):
        return False
    clause = next((c for c in _CLAUSES.findall(ask.resolved) if STILL + after in c), "")
    return clause.endswith(("，", ",", "；", ";", "。", "！", "!"))  # a clause that asks ends in "？" or the question


_CLAUSES = re.compile(r"[^，,；;。？?！!]+[，,；;。？?！!]?")


def _short(text: str) -> bool:
    return len(text) <= SHORT_FOLLOW_UP


_INSTIL = re.compile(r"要点(?=[几多])")  # 要点几滴、要点多久: 要 + 点 (to instil), as jieba would not cut it
# 点 (to instil) as an asker says it; labels and inserts write 滴 (滴眼、一次1滴、滴入结膜囊)
INSTIL_SAID, INSTIL_WRITTEN = "点", "滴"
EYE_DROPS = "滴眼液"  # the synonym group of 眼药水、眼药 …
# The asker's word for what a text names otherwise, one way only: "满足什么条件才考虑开刀" is the 手术 a pathway
# writes ("可考虑手术"), "角膜破口" the 伤口 a textbook writes. As a group of the lexicon, 手术 would match inside
# every longer word (近视手术) and stand for all of them, and 伤口 would become an everyday word no question is about.
# "5岁以下的小孩" are the 幼儿 a guideline writes of; a question on 幼儿 is not answered by one on every child.
_YOUNG = ("幼儿", "婴幼儿")
ASKERS_WORDS = {
    "开刀": ("手术",),
    "动手术": ("手术",),
    "破口": ("伤口", "创口"),
    **dict.fromkeys(("小孩", "孩子", "娃", "小朋友"), _YOUNG),
    **dict.fromkeys(("宝宝", "小宝宝", "宝贝"), ("婴儿", "新生儿", "婴幼儿")),  # a parent's word for the baby
}


OPERATIONS = {"手术", "开刀", "动手术"}
# the time an asker places before or after an operation, as texts abbreviate it (手术之前 → 术前)
OPERATION_PLACED = {
    **dict.fromkeys(("之前", "以前", "前"), "术前"),
    **dict.fromkeys(("之后", "以后", "后"), "术后"),
}


def _lexicon_names(term: Term, lex: Lexicon) -> list[str]:
    """The names of a term, without the text's words an asker's everyday word stands for (宝宝 → 新生儿)."""
    askers = ASKERS_WORDS.get(term.text, ())
    return [v for v in term.variants if v not in askers or v in lex.variants(term.text)]


_COUNTED_AFTER = re.compile(r"^(?:几|多少|多久|多长|[一二两三四五六七八九十半\d])")  # 点几次、点多久、点两滴
_HOW_OFTEN = {"一天", "每天", "一日", "每日", "每次", "一次", "每晚", "晚上", "睡前"}  # 一天点、睡前点


def _normalise_asking(text: str) -> str:
    """ "能不能用" asks whether it can be used; read as 不能用 (a 禁忌证 word) it would ask the opposite."""
    for asking, plain in ASKING_FORMS.items():
        text = text.replace(asking, plain)
    return _SPLIT_VERB.sub(r"\1\3\2", text)


def _described_signs(text: str, lex: Lexicon) -> list[tuple[int, int, str]]:
    """ "一到晚上光线暗就看不清东西，是缺了什么？": a sign told in everyday words, which texts name (夜盲). Where each
    description is written, and the name it describes; none for a sign the question names itself."""
    found = []
    for pattern, name in lex.descriptions:
        told = pattern.search(text)
        if told is not None and not any(variant in text.lower() for variant in lex.variants(name)):
            found.append((told.start(), told.end(), name))
    return found


def _name_described_signs(ask: Ask, signs: list[tuple[int, int, str]], lex: Lexicon) -> None:
    """The name of a described sign joins the question's terms, as a second name the asker gave it would: a text
    naming it answers, and so does one telling it in the description's last words (看不清). The description's words
    (晚上、光线) tell it the asker's way: they rank a passage naming them, and none is missed for lacking them."""
    placed = _placed(ask)
    for start, end, name in signs:
        told = [term for at, stop, term in placed if start <= at and stop <= end and not term.quoted]
        for term in told:
            term.scene = term.told = True
        last = told[-1].text if told else ""
        ask.terms.append(Term(name, lex.variants(name), entity=True, either=last, named_for=True))


# "住几天院", "请两天假", "开几次刀": a verb whose object the asker splits off with how long or how often; a text writes
# 住院、请假、开刀 whole ("术后住院3天"). "打几针" stays: 几针 is the count asked, in the text's own unit
_HOW_LONG_OR_OFTEN = r"(?:几|多少|[一二两三四五六七八九十\d]+)个?(?:天|周|星期|个月|月|次|晚)?"
_SPLIT_VERB = re.compile(rf"(住|请|开)({_HOW_LONG_OR_OFTEN})(院|假|刀)")


def _space_after_opener(text: str, lex: Lexicon) -> str:
    """ "那配了以后…", "它会…": jieba would glue a word that points back to the next word; split it off. "一天要点几
    次" instils drops: not 要点 (key points)."""
    for word in [*PLACE_POINTERS, *lex.follow_up]:  # "那里都能…": 那里, not 那
        if text.startswith(word) and len(text) > len(word):
            text = f"{word} {text[len(word) :]}"
            break
    text = _INSTIL.sub("要 点", text)
    return re.sub(r"它(?=[^们\s])", "它 ", text)


def _words(text: str) -> list[str]:
    """jieba's words, numbers kept whole (0.01%, 1.3375: jieba would cut them at the point), and names in Latin
    letters with digits (DN4, I-DN4, IL-6: a scale or a marker, not a name and a number)."""
    words: list[str] = []
    for piece in _NUMBER_SPLIT.split(text):
        if _NUMBER_SPLIT.fullmatch(piece) or _CODE_NAME.fullmatch(piece):
            words.append(piece)
        elif piece:
            raw = _product_names_joined(_coined_names_joined(_glossed_names(get_tokenizer().words(piece))))
            words += _numbered_names([w for w in raw if w.strip() and not _PUNCT.match(w)])
    return _all_apart(_instilling_apart(words))


def _instilling_apart(words: list[str]) -> list[str]:
    """ "开始点眼药": jieba's 点眼药 is putting in (点, written 滴) the drops a text names (眼药 → 滴眼液)."""
    lex = get_lexicon()
    drops = any(EYE_DROPS in lex.variants(word) for word in words)
    out: list[str] = []
    for word in words:
        if len(word) > 2 and word[0] in (INSTIL_SAID, INSTIL_WRITTEN) and EYE_DROPS in lex.variants(word[1:]):
            out += [word[0], word[1:]]
        elif drops and len(word) == 2 and word[0] == INSTIL_SAID and word[1] in VERB_ENDINGS:
            out += [word[0], word[1]]  # "眼药水…先点着": 点 with its ending, the drops put in
        else:
            out.append(word)
    return out


def _coined_names_joined(words: list[str]) -> list[str]:
    """A drug no dictionary has, named with its form (洛度沙胺滴眼液, 卡替洛尔滴眼液), which jieba guesses into pieces
    it does not know (洛度 / 沙胺, 卡替 / 洛尔): one name again, as a monograph's title writes it. Only before a form:
    elsewhere such pieces are as often the asker's words glued by jieba's guess (能先 / 做点)."""
    tokenizer = get_tokenizer()
    out: list[str] = []
    run: list[str] = []  # from a piece jieba does not know on (卡替 + 洛尔: a name's known ending goes with it)
    for word in [*words, ""]:
        piece = len(word) >= 2 and bool(_HAN_WORD.fullmatch(word)) and not tokenizer.is_dosage_form(word)
        if piece and (not tokenizer.knows(word) or (run and tokenizer.is_drug_name("".join(run) + word))):
            run.append(word)
            continue
        if len(run) >= 2 and tokenizer.is_dosage_form(word):
            out.append("".join(run))
        else:
            out += run
        run = []
        if word:
            out.append(word)
    return out


_HAN_WORD = re.compile(r"[\u4e00-\u9fff]+")


def _product_names_joined(words: list[str]) -> list[str]:
    """ "买四味珍层冰硼滴眼液": a product's name before its form, which jieba cut into a word it does not know and
    single characters after it (珍层 / 冰 / 硼), with what comes before it up to the verb or function word (四味):
    one name again, as the label writes it. A name of known words (玻璃酸钠滴眼液), or a brand followed by words of
    its own (爱特泪 / 单剂量 / 点眼凝胶), stays as jieba cut it."""
    tokenizer, function_words = get_tokenizer(), get_lexicon().function_words

    def in_name(word: str) -> bool:
        return (
            bool(_HAN_WORD.fullmatch(word))
            and word not in function_words
            and not (tokenizer.is_verb(word) or tokenizer.is_dosage_form(word))
        )

    out: list[str] = []
    for word in words:
        if tokenizer.is_dosage_form(word):
            start = len(out)
            while start and len(out[start - 1]) == 1 and in_name(out[start - 1]):
                start -= 1  # 冰 / 硼: characters jieba could not join
            if start < len(out) and start and len(out[start - 1]) >= 2 and not tokenizer.knows(out[start - 1]):
                start -= 1  # 珍层: the piece it does not know
                while start and len(out) - start < MAX_NAME_PIECES and in_name(out[start - 1]):
                    start -= 1
                out[start:] = ["".join(out[start:])]
        out.append(word)
    return out


MAX_NAME_PIECES = 4  # a product's name jieba cut is this many words at most (四味 / 珍层 / 冰 / 硼)


def _glossed_names(words: list[str]) -> list[str]:
    """A name glossed in Latin letters, "凡视达（Vyzulta）", that jieba cut (凡视 / 达): one name again, so the gloss
    names it and not its last character."""
    out: list[str] = []
    function_words = get_lexicon().function_words
    for index, word in enumerate(words):
        glossed = word in ("（", "(") and re.match(r"[A-Za-z]", words[index + 1] if index + 1 < len(words) else "")
        cut = len(out) >= 2 and _HAN_CHAR.fullmatch(out[-1]) and re.fullmatch(r"[\u4e00-\u9fff]+", out[-2])
        if glossed and cut and out[-2] not in function_words:
            last = out.pop()
            out[-1] += last
        out.append(word)
    return out


_HAN_CHAR = re.compile(r"[\u4e00-\u9fff]")


def _all_apart(words: list[str]) -> list[str]:
    """A noun and the auxiliary after it glued into one word: "哪些药会让…" (药会, joined by jieba's guess at words it
    does not know; so is 查些 of "都查些啥"), "啥药都没有" (药都, a town's nickname it does know, before a
    negation): each on its own again. Likewise 多大 / 多高 torn apart for a word it knows (大会)."""
    tokenizer = get_tokenizer()
    out: list[str] = []
    for word, following in zip(words, [*words[1:], ""]):
        glued = (
            len(word) == 2
            and word[1] in _GLUED_AFTER
            and word[0] not in _NEGATIONS  # "不点药": not applying it at all, said of 点 (instil) itself
            and (not tokenizer.knows(word) or tokenizer.general_rarity(word) > GLUED_RARITY)
        )
        if out and out[-1] == "多" and len(word) == 2 and f"多{word[0]}" in _HOW_MUCH_WORDS and word[1] in _AUXILIARIES:
            out[-1] += word[0]  # "长到多大会影响视力": jieba reads 多 / 大会 (a conference); 多大 / 会 it is
            out.append(word[1])
        elif len(word) >= 3 and word[0] in _GLUED_BEFORE and not tokenizer.knows(word) and tokenizer.knows(word[1:]):
            out += [word[0], word[1:]]  # "怎么才算治好": 算 + 治好, glued by jieba's guess at a word it does not know
        elif out and out[-1] == "哪" and len(word) >= 2 and word[0] in _MEASURE_WORDS:
            out[-1] += word[0]  # "好发于哪类人": jieba reads 哪 / 类人 (humanoid); 哪类 / 人 it is
            out.append(word[1:])
        elif len(word) >= 3 and word[-2:] in _HOW_MUCH_WORDS and not tokenizer.knows(word):
            out += [word[:-2], word[-2:]]  # "干性的占多大比例": jieba glues the verb onto 多大 (占多大), no name
        elif len(word) == 2 and word[0] in _AUXILIARIES and word[1] in _GROWTH_VERBS:
            out += [word[0], word[1]]  # "会长在哪里", "多久能长好": an auxiliary and 长 (grow), not 会长 (a chairman)
        elif _name_and_verb(word):
            out += [word[:-1], word[-1]]  # "润眸安是治什么的": jieba glued 是 onto a name it does not know
        elif len(word) >= 3 and word[-1] in _AUXILIARIES and not tokenizer.knows(word) and tokenizer.knows(word[:-1]):
            out += [word[:-1], word[-1]]  # "自己最多要掏多少钱": jieba's guess 最多要 is 最多 + 要
        elif len(word) >= 4 and word[:2] in _ASKING_HEADS and tokenizer.knows(word[2:]):
            out += [word[:2], word[2:]]  # "都查哪些项目": jieba knows 哪些项目 as one word; the asking word is no term
        elif glued and word[1] in _A_LITTLE:
            out.append(word[0])  # "做点啥", "滴点阿托品": 点 is "a little", no word of what is asked
        elif glued or (len(word) == 2 and word.endswith("都") and following.startswith(("没", "不"))):
            out += [word[0], word[1]]
        else:
            out.append(word)
    return out


_AUXILIARIES = "会都也就才还能要该"
_ASKING_HEADS = ("哪些", "哪个", "哪种", "哪类", "哪几", "什么", "多少")  # jieba's dictionary glues a few onto a noun
_MEASURE_WORDS = "类种些个样项条款"  # what 哪 counts by (哪类、哪种): jieba may glue it onto the noun after
_GLUED_BEFORE = "算才就都又也再还把被给让很太"  # one-character adverbs and verbs jieba glues onto the word after
_GROWTH_VERBS = "长"  # a one-character verb jieba glues onto the auxiliary before it into a noun it knows
_GLUED_AFTER = _AUXILIARIES + "些点"  # …and "都查些啥" (查些), "滴点药" (滴点): a verb and the 些/点 after it
GLUED_RARITY = 16.0  # a two-character word jieba lists this rarely (滴点) is a verb and 点 as the asker means it
_NEGATIONS = "不没别"
_A_LITTLE = "点"
_AFTER_A_NAME = "是有在和跟与"  # one-character words jieba glues onto an unknown name before them


def _name_and_verb(word: str) -> bool:
    """An unknown word of four characters or more ending in 是/有/在/和…, its head a coinage: a name and the word
    after it."""
    return (
        len(word) >= 4
        and word[-1] in _AFTER_A_NAME
        and bool(re.fullmatch(r"[\u4e00-\u9fff]+", word))
        and get_tokenizer().is_coinage(word)
        and get_tokenizer().is_coinage(word[:-1])
    )


_HOW_MUCH_WORDS = ("多大", "多高", "多少", "多久", "多长", "多远", "多深", "多重", "多宽", "多厚")  # ask a figure


def _numbered_names(words: list[str]) -> list[str]:
    """A lone numeral before a word names a thing by its count (五针法、四针法: regimens), which jieba cuts off and
    a count would then drop: one word again."""
    out: list[str] = []
    for word in words:
        if out and out[-1] in NUMERALS and len(word) >= 2 and not word.isascii():
            out[-1] += word
        else:
            out.append(word)
    return out


def _potential_complements(words: list[str]) -> list[str]:
    """ "灌不通", "冲不出来": a one-character verb, 不 and its result, cut apart by jieba, say the result did not come
    (V不C); a text says it of the result itself ("若无法灌通"): the verb with its result is the word to find."""
    out: list[str] = []
    i = 0
    while i < len(words):
        word, rest = words[i], words[i + 1 : i + 3]
        verb = (
            len(word) == 1
            and _CJK.match(word)
            and word not in NUMERALS
            and word not in "不我你他她它"
            and not get_tokenizer().is_noun(word)  # 眼不见: 眼 does not act
        )
        if verb and rest and len(rest[0]) == 2 and rest[0][0] == "不" and rest[0][1] in RESULT_COMPLEMENTS:
            out.append(word + rest[0][1])
            i += 2
        elif verb and len(rest) == 2 and rest[0] == "不" and (rest[1] in RESULT_COMPLEMENTS or rest[1] in RESULTS):
            out.append(word + rest[1])
            i += 3
        else:
            out.append(word)
            i += 1
    return out


def _merge(words: list[str], lex: Lexicon) -> list[str]:
    """Join neighbouring words that form one lexicon term or cue (重复低强度红光 + 治疗, 不 + 适合), and a capital
    letter written onto a word (维生素 + D)."""
    out, i = [], 0
    while i < len(words):
        for j in range(min(len(words), i + 4), i + 1, -1):
            joined = "".join(words[i:j])
            if joined.lower() in lex.entities or joined in lex.ask_cues:
                out.append(joined)
                i = j
                break
        else:
            word = words[i]
            if out and _LETTER_TAIL.match(word) and len(out[-1]) >= 2 and not out[-1].isascii():
                out[-1] += word
            else:
                out.append(word)
            i += 1
    return out


def _classify(ask: Ask, tokens: list[str], lex: Lexicon, in_a_chat: bool = True) -> str:
    """Sort tokens into terms, aspect cues and function words. Returns how the question points back: "refer"
    (它、其、这种… name the previous subject), "switch" (那、还有… move to a new one) or "". `in_a_chat`: there are
    earlier questions a demonstrative could point back to."""
    stopwords = get_tokenizer().stopwords
    marker, skip, offered = "", False, ""
    joins: list[int] = []  # the index of the term before each joiner between two subjects
    for index, token in enumerate(tokens):
        if skip:
            skip = False
            continue
        lowered = token.lower()
        asks_grade = _ASKS_GRADES.match(token) or (
            token == "几" and tokens[index + 1 : index + 2] in (["级"], ["期"], ["型"])
        )
        if token in RATING_VERBS and index + 1 < len(tokens) and tokens[index + 1].startswith("几"):
            continue  # "定几级": the verb of rating, no word a text has
        if asks_grade and index and tokens[index - 1] in RATING_VERBS:
            skip = token == "几"  # "鉴定一般定几级": which grade this case is given, not how grades are divided
            continue
        if asks_grade:
            _add_cue(ask, "分级", lex)  # 分几级 / 分几期: how it is graded, a classification, not one number
            skip = token == "几"
            continue
        if index and says_several(tokens[index - 1], token):
            continue  # "眼睛红了好几天了": the asker says how long, a number the answer need not give
        if token in lex.quantity_words or _ASKS_NUMBER.match(token) or _is_quantity_ask(token, lex):
            ask.quantity = ask.quantity or BARE_NUMBER
            if token not in MEASURED:
                continue  # 多久、几分钟、多少度 say what kind of answer is wanted, not what a passage must contain
        if token in INSTANCE_MARKERS and _class_follows(ask, tokens, index, lex):
            offered = ask.terms[-1].text  # "布洛芬这类NSAIDs": a text naming either one is about what is asked
            continue
        if token in PERSON_POINTERS and in_a_chat and not ask.terms:
            marker = marker or "refer"  # "她当初是怎么戴镜才感染上的？": the patient of the story asked of before
            continue
        if token in PLACE_POINTERS:
            if in_a_chat and not ask.terms:
                marker = marker or "refer"  # "那里都能做哪些检查？": the clinic or centre asked of before
            continue  # "眼睛那里红了": the place on the eye told, no word a text has
        if token in lex.follow_up:
            if token in lex.demonstratives and ask.terms and index and tokens[index - 1] == ask.terms[-1].text:
                ask.terms[-1].owner = token in POINTING_AT_ONE and _owner_name(ask.terms[-1].text)
                continue  # "急性泪囊炎那种红肿疼的": 那种 points at the word it follows, not back in the chat
            marker = "refer" if token not in SWITCH_WORDS else marker or "switch"  # 它 anywhere refers back
            following = tokens[index + 1] if index + 1 < len(tokens) else ""
            # 这种治疗 / 该药: the noun after a demonstrative names the previous topic, not a subject of its own.
            # With nothing asked before, "作者那个excel" names the excel: there is no earlier topic it could be.
            # "那个紧皮膏": a name of its own after the demonstrative is the thing pointed at, named
            skip = (
                in_a_chat
                and token in lex.demonstratives
                and bool(following)
                and following not in lex.function_words
                and not _names_one_thing(following)
            )
            continue
        if token == STILL and _says_still(ask, tokens, index):
            continue  # "看近处还是模糊，会不会有问题？": still blurred, no choice between two things
        if token in lex.joiners:
            # "A和B": a joiner between two subjects (not "效果和副作用", two aspects of one subject)
            before_term = bool(ask.terms) and ask.terms[-1].text == _last_content(tokens[:index], lex)
            after = tokens[index + 1] if index + 1 < len(tokens) else ""
            between = before_term and bool(after) and after not in lex.ask_cues
            if (
                token == LISTED
            ):  # "霰粒肿、新生儿泪道不通分别…": a list joins what it asks of only where it lists conditions
                between = (
                    between and ask.terms[-1].entity and (after.lower() in lex.entities or after in lex.populations)
                )
            ask.joined = ask.joined or between
            # "冲洗泪道或者探通能不能做": 或 asks of either, unless the question asks which one (哪种、选)
            offers_choice = token == "还是" or (token in CHOICE_JOINERS and bool(_ASKS_WHICH.search("".join(tokens))))
            ask.choice = ask.choice or (between and offers_choice)
            offered = ask.terms[-1].text if between and token in EITHER_JOINERS else ""
            joins += [len(ask.terms) - 1] if between else []
            continue
        if token in lex.split_words:
            ask.each = True
            continue
        if token in DEGREE_ADVERBS and index + 1 < len(tokens) and get_tokenizer().is_adjective(tokens[index + 1]):
            continue  # "几岁做比较好": 比较 says how good, it compares nothing
        if token in INDICATING and _WHAT.match("".join(tokens[index + 1 : index + 3])) and "原因" in lex.aspects:
            _add_cue(ask, "原因", lex)  # "双眼颞侧偏盲一般提示哪里出了问题": what lies behind a sign, not its signs
            continue
        if "原因" in lex.aspects and _asks_what_caused(tokens, index):
            _add_cue(ask, "原因", lex)  # "眼睛长胬肉是啥引起的": the cause asked, not what 引起 does (会引起什么)
            skip = _caught(tokens, index)  # the 上 of 感染上的
            continue
        if _counts_or_bounds(tokens, index, lex):
            continue
        validity = token == VALID and _asks_validity(tokens, index, lex)  # 有效 then is a word a text has
        if token in PROHIBITIONS and _WHILE_NOT.search(ask.resolved):
            continue  # "几天之内不能洗脸": how long a restriction lasts, which the text sets ("7天内勿洗脸"), no 禁忌证
        if _prevented(tokens, index, lex):
            pass  # "怎么预防阿米巴感染": the 感染 prevented is what is asked about, not its risk
        elif token in lex.ask_cues and not validity and not _has_object(tokens, index, lex):
            _add_cue(ask, token, lex)
            continue
        if token in lex.function_words:  # 能不能 is a question word, not 不能 (禁忌证)
            ask.many = ask.many or token in MANY_WORDS
            continue
        if _CORRELATIVE.fullmatch(token):
            continue
        if token.startswith(MOST) and len(token) > 2 and get_tokenizer().knows(token[1:]):
            token, lowered = token[1:], token[1:].lower()  # "最舒服": the 舒服 asked of, at its most (最舒适 of a text)
        if _softens(tokens, index, lex):
            continue  # "要注意点啥": 点 is 一点, no drop put in and no word to find
        if _COUNT_WORD.match(token) or token in NUMERALS:  # "最常见的三类问题": a text counts its list its own way
            continue  # (三大问题), or not at all; "鼓膜一穿孔": 一 is "as soon as", no word to find
        cue = next((c for c in lex.ask_cues if len(c) >= 2 and token.endswith(c) and len(token) > len(c)), None)
        if cue and token[: -len(cue)] in OBJECT_VERBS:
            cue = None  # 抗感染、预防感染: what is fought or prevented, no risk asked
        if cue and lowered not in lex.entities:  # 激光治疗 → 激光 + the aspect 治疗
            if not _names_its_kind(tokens, index + 1, lex):  # 真菌感染引起的角膜炎: 感染 says which 角膜炎
                _add_cue(ask, cue, lex)
            token, lowered = token[: -len(cue)], token[: -len(cue)].lower()
        if not token or token in lex.function_words or token in stopwords or lowered in stopwords:
            continue
        # …but the text's word written beside the asker's (宝宝…新生儿泪道不通) is a word of its own
        named_again = (t for t in ask.terms if t.text == token or lowered in _lexicon_names(t, lex))
        if same := next(named_again, None):
            # "人工晶体闪辉（glistening）", "带状疱疹后神经痛（PHN）": one concept, named twice; "眼前有黑影，是不是
            # 飞蚊症" names it by the disease's name, which is what a text is written under
            if lex.is_medical_wording(token) and not (lex.is_medical_wording(same.text) or _abbreviation(same.text)):
                same.text = token
            continue
        term = Term(token, lex.variants(token), entity=lex.is_entity(token), generic=token in lex.generic)
        if _instils(tokens, index):
            term.variants = [*term.variants, INSTIL_WRITTEN]
        term.variants += [w for w in ASKERS_WORDS.get(token, ()) if w not in term.variants]
        if index and tokens[index - 1] in OPERATIONS and (abbreviated := OPERATION_PLACED.get(token)):
            term.variants = [*term.variants, abbreviated]  # "手术之前要做哪些检查": a text writes 术前检查
        term.either, offered = offered, ""
        ask.terms.append(term)
    if ask.joined and len(ask.subjects) < 2 and not _kinds_of_one_subject(ask, joins):
        ask.joined = ask.choice = False
    ask.compared = _compared(ask, joins) if ask.joined else []
    if ask.choice and len(joins) == 1 and (who := _choice_of_who(ask.terms, joins[0], lex)):
        # "是男的多还是女的多": which people get it, asked of the subject; a text naming either of them answers
        who[1].either = who[0].text
        ask.joined = ask.choice = False
        ask.compared = []
    subjects = {t.text for t in ask.subjects}
    offers = [(t.either, t.text) for t in ask.terms if t.either]
    if offers and not any(a in subjects and b in subjects for a, b in offers):
        ask.joined = ask.choice = False  # "开着小夜灯或者大灯睡觉": either of two settings, not a choice of subjects
    if ask.choice and _WHEN_CHOICE.search(ask.resolved):
        # "受伤后马上就能做，还是要等一段时间": when to do it is asked, not how two things differ
        ask.joined = ask.choice = False
        ask.compared = []
        ask.quantity = ask.quantity or "时间"
    if ask.choice and not ask.aspects:  # "散瞳验光用环喷托酯还是阿托品？" asks when each is the one to use
        _add_cue(ask, "比较", lex)
    return marker


def _choice_of_who(terms: list[Term], join: int, lex: Lexicon) -> tuple[Term, Term] | None:
    """ "A还是B" between two kinds of people (男的多还是女的多, 大人还是小孩): who has it is asked of the subject, not
    two subjects compared. The two, nearest the joiner with at most one-character words (多) between; else None."""

    def nearest(indexes) -> Term | None:
        for index in indexes:
            if terms[index].text in lex.populations:
                return terms[index]
            if len(terms[index].text) > 1:
                return None
        return None

    left, right = nearest(range(join, -1, -1)), nearest(range(join + 1, len(terms)))
    return (left, right) if left and right else None


def _compared(ask: Ask, joins: list[int]) -> list[list[Term]]:
    """The noun phrases "A和B" joins, each as the terms written together without a break up to the joiner:
    "生长痛和骨肉瘤的疼" → 生长+痛 | 骨肉瘤. Where one side runs on longer than the other, its words beyond the
    other's length are shared by both ("早期喉癌放疗和手术": 放疗 | 手术, of 早期喉癌). [] when a joined side is
    not placed in the text or is all generic words."""
    placed = _placed_every(ask)
    groups: list[list[int]] = []
    for join in joins:
        left, right = ask.terms[join], ask.terms[join + 1] if join + 1 < len(ask.terms) else None
        at = next((i for i in range(len(placed) - 1) if placed[i][2] is left and placed[i + 1][2] is right), None)
        if right is None or at is None:
            return []
        a, b = _run(placed, ask.resolved, at, -1), _run(placed, ask.resolved, at + 1, 1)
        a, b = (
            _trim(placed, a, _span(placed, b), from_end=True),
            _whole_unless_noun(placed, b, _trim(placed, b, _span(placed, a), from_end=False)),
        )
        if groups and groups[-1][-1] >= a[0]:  # "A、B和C": B ends the last join and starts this one
            groups[-1] = sorted(set(groups[-1]) & set(a)) or groups[-1]
        else:
            groups.append(a)
        groups.append(b)
    while groups and groups[0][0] > 0 and _listed(ask.resolved, placed, groups[0][0]):  # "近视、远视和散光"
        before = _run(placed, ask.resolved, groups[0][0] - 1, -1)
        groups.insert(0, _trim(placed, before, _span(placed, groups[0]), from_end=True))
    terms = [[placed[i][2] for i in group if not placed[i][2].generic] for group in groups]
    return terms if len(terms) >= 2 and all(terms) else []


def _kinds_of_one_subject(ask: Ask, joins: list[int]) -> bool:
    """ "板层角膜移植和穿透性角膜移植": one subject, written on both sides of the joiner with a word of its own each —
    two kinds of it, compared."""
    sides = _compared(ask, joins)
    subjects = {t.text for t in ask.subjects}
    texts = {tuple(t.text for t in side) for side in sides}
    return (
        len(sides) >= 2
        and len(texts) == len(sides)
        and all(len(side) > 1 and any(t.text in subjects for t in side) for side in sides)
    )


def _whole_unless_noun(placed: list[tuple[int, int, Term]], run: list[int], trimmed: list[int]) -> list[int]:
    """ "泪囊炎和单纯鼻泪管阻塞": the words after the joiner cut to the other side's length leave only a qualifier
    (单纯) or whom it is of (新生儿), which names nothing by itself: the whole phrase is the second thing compared,
    not a word shared by both (as 视力 of "左眼和右眼视力" is)."""
    adjective, populations = get_tokenizer().is_adjective, get_lexicon().populations
    # …nor does whom it is of ("霰粒肿、新生儿泪道不通": 新生儿 says whose 泪道不通 is asked of)
    return run if all(adjective(placed[i][2].text) or placed[i][2].text in populations for i in trimmed) else trimmed


def _listed(text: str, placed: list[tuple[int, int, Term]], first: int) -> bool:
    """Whether the term at `first` follows the one before it in an enumeration ("、"), which jieba's words omit."""
    return text[placed[first - 1][1] : placed[first][0]].strip() == "、"


def _placed(ask: Ask) -> list[tuple[int, int, Term]]:
    """The question's terms with where each is written in the resolved text, in order."""
    placed, cursor = [], 0
    for term in ask.terms:
        at = ask.resolved.find(term.text, cursor)
        if at >= 0:
            placed.append((at, at + len(term.text), term))
            cursor = at + len(term.text)
    return placed


def _placed_every(ask: Ask) -> list[tuple[int, int, Term]]:
    """Like `_placed`, with every place a term is written: "板层角膜移植和穿透性角膜移植" writes its shared head on
    both sides of the joiner, though the question has the term once."""
    places = sorted(
        ((m.start(), m.end(), term) for term in ask.terms for m in re.finditer(re.escape(term.text), ask.resolved)),
        key=lambda p: (p[0], -p[1]),
    )
    placed: list[tuple[int, int, Term]] = []
    for place in places:
        if not placed or place[0] >= placed[-1][1]:
            placed.append(place)
    return placed


def _run(placed: list[tuple[int, int, Term]], text: str, start: int, step: int) -> list[int]:
    """From a term, the neighbouring terms written onto it without a break, towards `step` (-1 left, 1 right)."""
    run = [start]
    while 0 <= run[-1] + step < len(placed):
        left, right = sorted((run[-1], run[-1] + step))
        if text[placed[left][1] : placed[right][0]]:
            break
        run.append(run[-1] + step)
    return sorted(run)


def _span(placed: list[tuple[int, int, Term]], run: list[int]) -> int:
    return placed[run[-1]][1] - placed[run[0]][0]


def _trim(placed: list[tuple[int, int, Term]], run: list[int], length: int, from_end: bool) -> list[int]:
    """The terms of a run nearest the joiner that cover `length` characters (the other side's): the rest of a
    longer side qualifies both."""
    order = list(reversed(run)) if from_end else run
    choices = [sorted(order[: n + 1]) for n in range(len(order))]
    return min(choices, key=lambda kept: (abs(_span(placed, kept) - length), len(kept)))  # ties: the shorter


def _reason_over_negation(ask: Ask, lex: Lexicon) -> None:
    """ "为什么……的K值不能直接拿来算" asks why: its 不能 is what the reason is asked for, not a second question
    about contraindications. The noun (禁忌证) still asks for them."""
    if "原因" not in ask.aspects or "禁忌证" not in ask.aspects:
        return
    negations = [c for c in ask.cues if lex.aspect_of(c) == "禁忌证"]
    why_words = [cue for cue, aspect in lex.ask_cues.items() if aspect == "原因"]
    why = min((i for w in why_words if (i := ask.question.find(w)) >= 0), default=-1)
    # "…不推荐用哪个阿片药？为什么？" asks two things: the reason there is asked for another sentence
    after_why = all(_same_sentence(ask.question, why, ask.question.find(c)) for c in negations)
    if why >= 0 and after_why and all(not c.startswith("禁忌") for c in negations):
        ask.aspects.remove("禁忌证")
        ask.cues = [c for c in ask.cues if c not in negations]


def _without_names(text: str, terms: list[Term]) -> str:
    """The question with its domain names blanked out: the 剂量 of 剂量末疼痛 asks for no dose."""
    for term in terms:
        if term.entity and len(term.text) >= 2:
            text = text.replace(term.text, " ")
    return text


def _number_judged_safe(ask: Ask, lex: Lexicon) -> None:
    """ "隐形眼镜一天最多戴几个小时比较安全？" asks for a number, the safe limit: its 安全 judges the number asked
    for, it does not ask about harm, so the sentence that gives the limit ("每日配戴不超过 8 小时") need not name
    a side effect."""
    judging = [c for c in ask.cues if c in JUDGING_CUES]
    if not ask.quantity or not judging:
        return
    judged = {lex.aspect_of(c) for c in judging}
    kept = [c for c in ask.cues if c not in judging]
    ask.aspects = [a for a in ask.aspects if a not in judged or any(lex.aspect_of(c) == a for c in kept)]
    ask.cues = kept


def _number_over_treatment(ask: Ask, tokens: list[str], lex: Lexicon) -> None:
    """ "腕踝针治疗癌痛，一次留针多长时间？" asks for a number: its 治疗 (a verb with its object, 癌痛) names which use
    of 腕踝针 is meant, not a question about treatment that the answering sentence ("留针30min-4h") must word."""
    if not ask.quantity or ask.cues != [TREATMENT_VERB]:
        return
    at = next((i for i, token in enumerate(tokens) if token.endswith(TREATMENT_VERB)), -1)
    following = tokens[at + 1 : at + 2]
    if at >= 0 and following and _object_noun(following[0], lex):
        ask.aspects = [a for a in ask.aspects if a != lex.aspect_of(TREATMENT_VERB)]
        ask.cues = []


def _same_sentence(text: str, why: int, cue: int) -> bool:
    return 0 <= why < cue and not re.search(r"[？?。！!]", text[why:cue])


def _has_object(tokens: list[str], index: int, lex: Lexicon) -> bool:
    """The cue is a verb with its object ("可以预防近视吗": does it prevent 近视), unless asked how ("怎么预防阿米巴
    感染": the precautions)."""
    if index and tokens[index - 1] in HOW_WORDS and tokens[index] in OBJECT_VERBS:
        return False
    if _verb_with_object(tokens[index], tokens[index + 1 : index + 3], lex):
        return True
    return _names_its_kind(tokens, index, lex) or _names_its_kind(tokens, index + 1, lex)


def _names_its_kind(tokens: list[str], index: int, lex: Lexicon) -> bool:
    """ "真菌感染引起的角膜炎，局部点药一般怎么用": a causing verb before 的 and a domain term says which kind of it
    is asked about (the cause, 感染 too, qualifies the disease); it asks for no complication."""
    if index >= len(tokens):
        return False
    following = tokens[index + 1 : index + 3]
    return tokens[index] in CAUSING and following[:1] == ["的"] and len(following) == 2 and lex.is_entity(following[1])


def _prevented(tokens: list[str], index: int, lex: Lexicon) -> bool:
    """A risk word (感染、并发症) at most three words after 预防/避免/防范 is what is prevented."""
    if lex.ask_cues.get(tokens[index]) != RISKS:
        return False
    return any(token in OBJECT_VERBS for token in tokens[max(0, index - PREVENTED_SPAN) : index])


def _verb_with_object(cue: str, following: list[str], lex: Lexicon) -> bool:
    """ "可以预防近视吗" asks whether it prevents 近视 (a verb and its object), not for precautions (怎么预防？)."""
    if lex.aspect_of(cue) == DIAGNOSIS and _says_when(following, lex):
        return True  # "沙眼确诊后吃什么药": 确诊后 says when, it does not ask how it is diagnosed
    if cue not in OBJECT_VERBS or not following:
        return False
    return _object_noun(following[0], lex)


def _says_when(following: list[str], lex: Lexicon) -> bool:
    """ "确诊后", "确诊青光眼以后": the cue, or the cue and the disease it names, then a word of time — the moment
    from which the question asks, not what it asks."""
    if following[:1] and following[0] in STAGE_WORDS:
        return True
    return len(following) >= 2 and lex.is_entity(following[0]) and following[1] in STAGE_WORDS


def _class_follows(ask: Ask, tokens: list[str], index: int, lex: Lexicon) -> bool:
    """The marker stands between a term of this question and the noun of the kind it belongs to."""
    before = tokens[index - 1].lower() if index else ""
    if not ask.terms or before not in (ask.terms[-1].text.lower(), *ask.terms[-1].variants):
        return False
    following = [t for t in tokens[index + 1 : index + 3] if t != "的"][:1]
    return bool(following) and _object_noun(following[0], lex)


def _object_noun(word: str, lex: Lexicon) -> bool:
    return word.lower() in lex.entities or (word not in lex.function_words and get_tokenizer().is_noun(word))


def _is_quantity_ask(token: str, lex: Lexicon) -> bool:
    return any(token == word for words, _ in lex.quantities.values() for word in words)


def _last_content(tokens: list[str], lex: Lexicon) -> str:
    """The last token before a joiner that is not a function word (the one the joiner attaches to)."""
    for token in reversed(tokens):
        if token not in lex.function_words and token not in get_tokenizer().stopwords:
            return token
    return ""


def _add_cue(ask: Ask, cue: str, lex: Lexicon) -> None:
    aspect = lex.aspect_of(cue)
    if aspect and aspect not in ask.aspects:
        ask.aspects.append(aspect)
    if cue not in ask.cues:
        ask.cues.append(cue)


def _names_one_thing(word: str) -> bool:
    """A name that can only mean one thing (紧皮膏、OK镜): a coinage or an abbreviation, never a class a demonstrative
    points back through (这种药、该病) nor words jieba ran on after one (病能点激素 of "这种病能点激素眼药水")."""
    return _coined_name(word) or _abbreviation(word)


def _abbreviation(word: str) -> bool:
    """A name in Latin letters (BLINK, LAMP, TSAb): a study, product or test the lexicon cannot list them all of."""
    return word.isascii() and sum(c.isalpha() for c in word) >= 2


def _asked_of_before(before: Ask, ask: Ask) -> list[Term]:
    """What the last question asked of its subject ("视力" of "考小车驾照，视力要达到多少？"), carried as context
    into "要是考大客车呢？": the same question of a new subject, searched and weighed, never required."""
    own = {t.text for t in ask.terms}
    subjects = {t.text for t in before.subjects}
    return [
        replace(t, context=True)
        for t in before.terms
        if t.text not in subjects and t.text not in own and not (t.generic or t.scene or t.context or t.told)
    ]


def _asks_as_before(question: str, text: str, lex: Lexicon) -> bool:
    """ "那HAL呢？", "那双眼的": too short to ask anything but what the last question asked. "那做完当天可以洗头吗？"
    is short too, but asks its own question (可以…吗): not the last one's 多长时间."""
    if question.strip().rstrip(TRAILING).endswith("呢"):
        return True
    stripped = _strip_markers(text, lex)
    return _short(stripped) and not _OWN_QUESTION.search(question)


_OWN_QUESTION = re.compile(
    r"[吗么啥谁怎否几]|什么|多少|多久|多大|多长|多高|多重|多远|可以|可不可以|能不能|要不要|会不会|是不是|有没有|哪"
)


def _has_specific(terms: list[Term], lex: Lexicon) -> bool:
    return any(not t.generic and t.text.lower() not in lex.not_subjects for t in terms)


def _strip_markers(text: str, lex: Lexicon) -> str:
    changed = True
    while changed:
        changed = False
        for word in [*PLACE_POINTERS, *lex.follow_up]:  # 那里 before its 那
            if text.startswith(word):
                text, changed = text[len(word) :], True
    return text.lstrip("的")
