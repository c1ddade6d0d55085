"""jieba tokenising with the ophthalmology lexicon (`lexicon/`): user dictionary, stop-words and synonym groups.

tokens = get_tokenizer().tokenize(get_tokenizer().expand_query("OK镜的副作用"))
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from functools import lru_cache
from pathlib import Path

from clincite.text.script import fold

LEXICON_DIR = Path(__file__).resolve().parent / "lexicon"  # package data


MEDICAL_TERMS = "thuocl_medical.txt"
# THUOCL counts the documents of its medical corpus a word is in: the words in this many or more (检查、医院、治疗、
# 患者、症状) are healthcare's everyday vocabulary, not the name of a subject
GENERAL_MEDICAL_FREQUENCY = 50_000
# jieba's tags of nouns (n, nr, nz, ns, nt …), time nouns (t: 潜伏期) and abbreviated nouns (j: 医保、社保)
NOUN_TAGS = ("n", "t", "j")
TAGGED_WORDS_KEPT = 50_000  # words whose part-of-speech tags are kept (a bound, never reached by one KB's questions)
# jieba's guess across a modal verb or an adverb of order (想换贵 is 想 + 换 + 贵, 眼先点 is 眼 + 先 + 点): an
# everyday phrase, not a name (肯 and 还 spell names too: 肯雅热, 还少丹)
PHRASE_CHARS = set("想要该需先再都就才")
VERB_ENDINGS = set("过着了到出进来去完好起上下住成够")  # written on a verb: 做过、开着、伤到、拿出、盖够
PHRASE_FREQUENCY = 3  # jieba's frequency for the idioms and set phrases its dictionary lists (这么久、打扫卫生)
MIN_DICTIONARY_WORD = 3  # shorter synonyms would re-cut ordinary text around them
SYNONYM_FREQUENCY = 2000
# THUOCL lists many drugs only as products (利巴韦林注射液, 磷酸奥司他韦胶囊); a guideline and a clinician name the
# drug itself, which jieba would cut into pieces (利巴韦 + 林, 奥 + 司 + 他 + 韦). The dosage forms and salts below are
# taken off a product's name to give the drug's.
DOSAGE_FORMS = sorted(
    [
        "注射液",
        "注射剂",
        "颗粒",
        "胶囊",
        "软胶囊",
        "肠溶胶囊",
        "缓释胶囊",
        "片",
        "分散片",
        "肠溶片",
        "缓释片",
        "控释片",
        "咀嚼片",
        "含片",
        "泡腾片",
        "泡腾颗粒",
        "薄膜衣片",
        "干混悬剂",
        "混悬液",
        "混悬剂",
        "滴眼液",
        "眼用凝胶",
        "眼膏",
        "凝胶",
        "软膏",
        "乳膏",
        "气雾剂",
        "喷雾剂",
        "喷剂",
        "口服液",
        "口服溶液",
        "糖浆",
        "栓",
        "贴剂",
        "透皮贴剂",
        "透皮贴",
        "贴片",
        "滴眼剂",
        "眼药水",
        "滴丸",
        "丸",
        "滴剂",
        "溶液",
        "粉针",
        "钠",
        "钾",
        "氯化钠注射液",
        "葡萄糖注射液",
    ],
    key=len,
    reverse=True,
)
DRUG_HEADS = (
    "激素",
    "霉素",
    "沙星",
    "洛尔",
    "地平",
    "单抗",
    "西林",
    "他汀",
    "替尼",
    "卡因",
    "蛋白酶",
    "激酶",
)  # the endings drugs' names have
SALT_ENDINGS = ("钠", "钾")  # cut off a name as its forms are (玻璃酸钠 → 玻璃酸), but no form a product is given in
PRODUCT_FORMS = frozenset(DOSAGE_FORMS) - set(SALT_ENDINGS)
SALT_PREFIXES = (
    "注射用",
    "盐酸",
    "硫酸",
    "磷酸",
    "醋酸",
    "马来酸",
    "枸橼酸",
    "酒石酸",
    "甲磺酸",
    "富马酸",
    "琥珀酸",
    "乳酸",
)
DRUG_NAME_CHARS = (3, 8)
MIN_LEFT_OVER = 2  # characters of a word left beside a synonym in it that are a word of their own
LONG_WORD = 4  # jieba's search mode finds the two- and three-character words inside a longer one; we add these
COMMON_PIECE_FREQUENCY = 100  # a drug name cut into pieces this common (复方 + 感冒) is made of ordinary words
_PUNCT_OR_SPACE = re.compile(r"^[\s\W_]+$", re.UNICODE)


class Tokenizer:
    """jieba with the ophthalmology user dictionary, stop-words removed, ASCII lower-cased."""

    def __init__(self, lexicon_dir: Path = LEXICON_DIR):
        import jieba

        jieba.setLogLevel(logging.WARNING)
        self._jieba = jieba.Tokenizer()
        self._jieba.initialize()
        self.medical_vocabulary: set[str] = set()  # specialised medical words (is_medical)
        self.drug_names: set[str] = set()  # the drugs THUOCL's product names name (奥洛他定 of 奥洛他定滴眼液)
        self.medical_terms = self._add_medical_terms(lexicon_dir / MEDICAL_TERMS)
        userdict = lexicon_dir / "userdict.txt"
        if userdict.exists():
            self._jieba.load_userdict(str(userdict))
        stopfile = lexicon_dir / "stopwords.txt"
        self.stopwords = (
            {w.strip() for w in stopfile.read_text(encoding="utf-8").splitlines() if w.strip()}
            if stopfile.exists()
            else set()
        )
        # Everyday words a question and a text write two ways (舒服/舒适, 牌子/品牌): they match each other as synonyms
        # do, but name no domain term
        self.wordings = load_synonyms(lexicon_dir / "wordings.json")
        domain_terms = load_synonyms(lexicon_dir / "synonyms.json")
        self.synonyms = domain_terms + self.wordings
        self.signature = _signature(lexicon_dir, jieba.__version__)
        self._pos = None  # jieba's part-of-speech tagger over the same dictionary, built on first use
        self._tags: dict[str, list[str]] = {}  # a word's tags, once tagged: the judge asks of the same words often
        for group in domain_terms:  # a named concept stays one word (加巴喷丁, not 加巴 + 喷丁), in text and query
            for term in group:
                if len(term) >= MIN_DICTIONARY_WORD and not term.isascii():
                    self._jieba.add_word(term, SYNONYM_FREQUENCY)

    def _add_medical_terms(self, path: Path) -> set[str]:
        """THUOCL's medical lexicon (MIT; THUOCL_LICENSE.txt): ~14,000 terms jieba's general dictionary lacks
        (手足口病、霰粒肿、加巴喷丁) become words, so a question and a passage are cut alike and a term is one term."""
        if not path.exists():
            return set()
        added = set()
        rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
        words = [row[0].strip() for row in rows]
        self.medical_vocabulary = {
            row[0].strip()
            for row in rows
            if len(row[0].strip()) >= 2 and len(row) > 1 and int(row[1] or 0) < GENERAL_MEDICAL_FREQUENCY
        }
        for word in words:
            if len(word) >= 2 and word not in self._jieba.FREQ:
                self._jieba.add_word(word)  # jieba works out the frequency that keeps it whole
                added.add(word)
        self.drug_names = {_drug_of(word) for word in words} - {""}
        for drug in self.drug_names:
            self.medical_vocabulary.add(drug)  # 奥司他韦 of 磷酸奥司他韦胶囊
            if not self._jieba.FREQ.get(drug) and self._cut_apart(drug):
                self._jieba.add_word(drug)
                added.add(drug)
        return added

    def _cut_apart(self, word: str) -> bool:
        """jieba cuts the word into a single character or a piece it hardly knows: no ordinary words."""
        pieces = self._jieba.lcut(word, HMM=False)
        return any(len(p) == 1 or self._jieba.FREQ.get(p, 0) < COMMON_PIECE_FREQUENCY for p in pieces)

    def tokenize(self, text: str) -> list[str]:
        """Index and query tokens, in Simplified characters (a Traditional text and a Simplified question meet)."""
        tokens = []
        for token in self._jieba.cut_for_search(fold(text)):
            token = token.strip().lower()
            if token and token not in self.stopwords and not _PUNCT_OR_SPACE.match(token):
                tokens.extend(self._longer_words_inside(token))
                tokens.append(token)
        return tokens

    def _longer_words_inside(self, token: str) -> list[str]:
        """The words of four characters or more inside a longer one: jieba's search mode gives a word's two- and
        three-character words only, so 奥洛他定滴眼液 would never meet a monograph titled 奥洛他定."""
        if len(token) <= LONG_WORD or token.isascii():
            return []
        freq = self._jieba.FREQ
        return [
            token[i : i + n]
            for n in range(LONG_WORD, len(token))
            for i in range(len(token) - n + 1)
            if freq.get(token[i : i + n])
        ]

    def words(self, text: str) -> list[str]:
        """Plain jieba segmentation with the domain dictionary (no stop-word removal), cut where the Simplified
        reading of the text is cut: the words are the text's own characters."""
        return _aligned(text, self._jieba.lcut(fold(text)))

    def dictionary_words(self, text: str) -> list[str]:
        """Segmentation by the dictionary alone: no word guessed from characters (jieba's HMM glues unknown runs
        into pseudo-words such as "时先用"); what a word the KB has never seen is made of."""
        return _aligned(text, self._jieba.lcut(fold(text), HMM=False))

    def is_noun(self, word: str) -> bool:
        """jieba's part of speech says the word names a thing (n, nr, nz, ns, nt, t …), not an action or a number."""
        word = fold(word)
        if word in self.medical_terms:
            return True
        flags = self._flags(word)
        return bool(flags) and flags[-1][:1] in NOUN_TAGS

    def is_verbal_noun(self, word: str) -> bool:
        """jieba's part of speech says the word is an action named as a thing (筛查、训练): the head of 眼病筛查."""
        flags = self._flags(fold(word))
        return bool(flags) and flags[-1] == "vn"

    def is_medical(self, word: str) -> bool:
        """The word is specialised medical vocabulary (THUOCL's medical lexicon below its everyday words):
        环孢素、疫苗、潜伏期, not 检查、医院, nor 工友、书本、台灯."""
        return fold(word) in self.medical_vocabulary

    def is_time_word(self, word: str) -> bool:
        """jieba's part of speech says the word places in time (将来、平时、当天: t), which a text says its own way."""
        flags = self._flags(word)
        return bool(flags) and all(flag.startswith("t") for flag in flags)

    def is_drug_name(self, word: str) -> bool:
        """A drug's name: one a product's name in the medical lexicon gives (奥洛他定 of 奥洛他定滴眼液), or a word
        ending as drugs' names do (噻吗洛尔、妥布霉素、激素)."""
        word = fold(word)
        if word in PRODUCT_FORMS:
            return False
        return word in self.drug_names or (len(word) >= 2 and word.endswith(DRUG_HEADS))

    def is_dosage_form(self, word: str) -> bool:
        """滴眼液、眼膏、片 …: the form a product's name ends in."""
        return fold(word) in PRODUCT_FORMS

    def knows(self, word: str) -> bool:
        """jieba's dictionary has the word (its HMM also joins characters it has never seen together: 药会)."""
        return self._jieba.FREQ.get(fold(word), 0) > 0

    def is_coinage(self, word: str) -> bool:
        """A word neither the dictionary nor its known pieces make (宜可利、洁厕灵): a product's or a person's name,
        not an everyday phrase jieba joined (一穿孔 is 一 + 穿孔)."""
        return not self.knows(word) and not self._known_pieces(word)

    def is_adverb(self, word: str) -> bool:
        """jieba's part of speech says the word qualifies a verb (偶尔、赶紧、一直: d): how the asker tells it."""
        flags = self._flags(word)
        return bool(flags) and all(flag == "d" for flag in flags)

    def is_verb(self, word: str) -> bool:
        """jieba's part of speech says the word is an action (买、点、用: v, vn, vd …)."""
        flags = self._flags(word)
        return bool(flags) and all(flag.startswith("v") for flag in flags)

    def is_place(self, word: str) -> bool:
        """jieba's part of speech says the word is a place name (ns): 香港、台北, not 眼科 or 医院."""
        return self._flags(word) == ["ns"]

    def is_adjective(self, word: str) -> bool:
        """jieba's part of speech says the word describes (好、合适、安全): a, ad, an."""
        flags = self._flags(word)
        return bool(flags) and all(flag.startswith("a") for flag in flags)

    def _flags(self, word: str) -> list[str]:
        if (tags := self._tags.get(word)) is not None:
            return tags
        if self._pos is None:
            import jieba.posseg

            self._pos = jieba.posseg.POSTokenizer(self._jieba)
        if len(self._tags) >= TAGGED_WORDS_KEPT:
            self._tags.clear()
        tags = self._tags[word] = [flag for _, flag in self._pos.lcut(fold(word))]
        return tags

    def general_rarity(self, word: str) -> float:
        """How rare the word is in general Chinese (jieba's dictionary frequencies): ln(total / (freq + 1)); ~6 for
        需要, ~9.8 for 手术, ~14 for 青光眼, ~18 for a word the dictionary does not know."""
        word = fold(word)
        if word in self.medical_terms:  # a medical term general Chinese does not know
            return math.log(self._jieba.total)
        frequency = self._jieba.FREQ.get(word, 0)
        if not frequency and (pieces := self._known_pieces(word)):
            return max(self.general_rarity(piece) for piece in pieces)
        rarity = math.log(self._jieba.total / (frequency + 1))
        if 0 < frequency <= PHRASE_FREQUENCY and (pieces := self._phrase_pieces(word)):
            # jieba lists everyday phrases at a token frequency (这么久、昨天下午、睁不开): as everyday as their words
            return min(rarity, max(self.general_rarity(piece) for piece in pieces))
        return rarity

    def _phrase_pieces(self, word: str) -> list[str]:
        """The two dictionary words a listed phrase is made of (昨天下午 → 昨天 + 下午; 睁不开 → 睁 + 不开), the
        likeliest split as jieba would weigh it; [] when none, or when both are single characters and the second is
        no verb ending (青光 + 眼 aside, 扎 + 穿 is a verb and its result: 扎 alone weighs). A noun keeps its own
        rarity: 淋球菌、腺病毒 name one thing, however common 病毒 is."""
        if any(flag.startswith("n") for flag in self._flags(word)):
            return []
        listed = self._jieba.FREQ
        splits = [
            (word[:i], word[i:])
            for i in range(1, len(word))
            if listed.get(word[:i], 0) > PHRASE_FREQUENCY and listed.get(word[i:], 0) > PHRASE_FREQUENCY
        ]
        if not splits:
            return []
        left, right = max(splits, key=lambda s: math.log(listed[s[0]]) + math.log(listed[s[1]]))
        if len(left) >= 2 or len(right) >= 2:
            return [left, right]
        return [left] if right in VERB_ENDINGS else []

    def _known_pieces(self, word: str) -> list[str]:
        """The dictionary words an unknown word is made of when it is a known word with a particle or complement
        written on (做过、开着、伤到: as everyday as 做、开、伤) or known words put together (角膜曲率计): its
        rarity is theirs. [] for a new coinage of characters (洁厕灵), which is as rare as it looks."""
        pieces = list(self._jieba.cut(word, HMM=False))
        if len(pieces) < 2 or not all(self._jieba.FREQ.get(p, 0) for p in pieces):
            return []
        if any(len(p) >= 2 for p in pieces) or (len(pieces) >= 3 and set(pieces[:-1]) & PHRASE_CHARS):
            return pieces
        return pieces[:-1] if pieces[-1] in VERB_ENDINGS else []

    def tokenize_many(self, texts: list[str]) -> list[list[str]]:
        return [self.tokenize(t) for t in texts]

    def expand_query(self, query: str) -> str:
        """Append the synonyms and abbreviations of every term the query mentions (OK镜 → 角膜塑形镜 …)."""
        return expand_with_synonyms(query, self.synonyms)

    def query_groups(self, query: str) -> list[list[list[str]]]:
        """The query as concepts for BM25: each concept a list of alternatives, each alternative a list of tokens.

        A word of the query is one concept; its alternatives are its own tokens and each of its synonyms
        ("OK镜" → "角膜塑形镜", "orthokeratology" …). BM25 counts a concept once, by its best alternative, so six
        names of the same lens do not outweigh the rest of the question six times over. A lexicon term that spans
        several words ("多焦点软性角膜接触镜") is one concept; a term inside a longer one (阿托品 in 低浓度阿托品)
        is one more alternative of it.
        """
        query = fold(query)
        lowered = query.lower()
        # (spans, alternatives) of synonym mentions. A group named twice ("…的适应证 宜可利 … 适应症") is one concept
        # at each place it is named, never one span over the words between
        concepts: list[tuple[list[tuple[int, int]], list[list[str]]]] = []
        mentioned = []
        for group in self.synonyms:
            spans = _merged(sorted(m for term in group for m in _mention_spans(lowered, term.lower())))
            if spans:
                mentioned.append((spans, group))
        for spans, group in sorted(mentioned, key=lambda m: -max(e - s for s, e in m[0])):  # the longest mention first
            variants = [self._whole(term) for term in group]
            start, end = max(spans, key=lambda span: span[1] - span[0])
            inside = next((c for c in concepts if any(s <= start and end <= e for s, e in c[0])), None)
            if inside is not None:  # 阿托品 within 低浓度阿托品: another way to match the same concept
                inside[1].extend(v for v in variants if v and v not in inside[1])
                inside[0].extend(span for span in spans if span not in inside[0])
                continue
            concepts.append((spans, [self.tokenize(query[start:end]), *[v for v in variants if v]]))
        groups: list[list[list[str]]] = [[alt for alt in alternatives if alt] for _, alternatives in concepts]
        covered = [span for spans, _ in concepts for span in spans]
        offset = 0
        for word in self.words(query):
            start, end = offset, offset + len(word)
            offset = end
            for piece in _uncovered(query, start, end, covered):
                if tokens := self.tokenize(piece):
                    groups.append([tokens])
        return [g for g in groups if g]

    def _whole(self, term: str) -> list[str]:
        """A synonym as whole words (a lexicon term is one token), not its sub-words: "低剂量阿托品" must not
        stand for the concept through "剂量" alone."""
        return [tok for word in self.words(term) for tok in [word.strip().lower()] if tok and tok not in self.stopwords]


def _uncovered(text: str, start: int, end: int, covered: list[tuple[int, int]]) -> list[str]:
    """The parts of a word outside the synonym mentions in it: 奥洛他定 of 奥洛他定滴眼液, whose 滴眼液 is a concept of
    its own (one character left over is no word)."""
    pieces, at = [], start
    for s, e in sorted(span for span in covered if span[0] < end and start < span[1]):
        pieces.append(text[at:s])
        at = max(at, e)
    pieces.append(text[at:end])
    whole = not any(s < end and start < e for s, e in covered)
    return [p for p in pieces if p and (whole or len(p) >= MIN_LEFT_OVER)]


def _drug_of(product: str) -> str:
    """The drug a product's name names (磷酸奥司他韦胶囊 → 奥司他韦), or "" when the name has no dosage form."""
    form = next((f for f in DOSAGE_FORMS if product.endswith(f)), "")
    if not form:
        return ""
    drug = product[: -len(form)]
    salt = next((p for p in SALT_PREFIXES if drug.startswith(p)), "")
    drug = drug[len(salt) :]
    low, high = DRUG_NAME_CHARS
    return drug if low <= len(drug) <= high else ""


def _aligned(text: str, pieces: list[str]) -> list[str]:
    """The text cut at the lengths of the pieces its folded reading was cut into (folding keeps every length)."""
    words, start = [], 0
    for piece in pieces:
        words.append(text[start : start + len(piece)])
        start += len(piece)
    return words if start == len(text) else pieces


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with the overlapping ones joined (低浓度阿托品 and its 阿托品)."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _mention_spans(text: str, term: str) -> list[tuple[int, int]]:
    if term.isascii():
        return [(m.start(), m.end()) for m in re.finditer(rf"(?<![a-z]){re.escape(term)}(?![a-z0-9])", text)]
    spans, start = [], text.find(term)
    while start >= 0:
        spans.append((start, start + len(term)))
        start = text.find(term, start + 1)
    return spans


# What else decides what the keyword index holds (bumped when it changes: 2 — reference-list lines are not indexed;
# 3 — tokens in Simplified characters, clincite.text.script; 5 — the words of four characters or more inside a
# longer word are tokens too)
INDEXING_RULES = 5


def _signature(lexicon_dir: Path, jieba_version: str) -> str:
    """What decides how text is cut: jieba's version and the lexicon files. An index cut another way (a KB indexed
    before an upgrade) no longer matches the questions: ingest rebuilds it when this differs from the index's."""
    # the dosage forms decide which drugs of the lexicon's product names become words (奥洛他定 of 奥洛他定滴眼液)
    digest = hashlib.sha256(f"{jieba_version} {INDEXING_RULES} {'|'.join(DOSAGE_FORMS)}".encode())
    for path in sorted(lexicon_dir.glob("*.txt")) + sorted(lexicon_dir.glob("*.json")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def load_synonyms(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    groups = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(groups, dict):  # {"_comment": …, "groups": […]}
        groups = groups["groups"]
    return [[str(term) for term in group if str(term).strip()] for group in groups if len(group) > 1]


def expand_with_synonyms(query: str, groups: list[list[str]]) -> str:
    lowered = fold(query).lower()
    extra: list[str] = []
    for group in groups:
        if any(_mentions(lowered, term.lower()) for term in group):
            extra.extend(t for t in group if t.lower() not in lowered and t not in extra)
    return f"{query} {' '.join(extra)}" if extra else query


def _mentions(text: str, term: str) -> bool:
    # ASCII abbreviations (AL, IOP, CNV) only count as whole words, so "AL" does not fire inside "VAL".
    if term.isascii():
        return re.search(rf"(?<![a-z0-9]){re.escape(term)}(?![a-z0-9])", text) is not None
    return term in text


@lru_cache(maxsize=1)
def get_tokenizer() -> Tokenizer:
    """The process-wide tokenizer: every extra jieba dictionary costs ~0.9 s and ~70 MB."""
    return Tokenizer()
