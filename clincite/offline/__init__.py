"""Offline mode: an honest extractive answerer on typed inputs, behind the same interface as the LLM agents.

    reasoner = OfflineReasoner(                                  # like LLMReasoner
        stats=searcher.term_stats, openings=searcher.section_openings, topics=searcher.document_topics
    )
    ask = analyse("哪些孩子不适合验配角膜塑形镜？")           # content terms, aspects (禁忌证), follow-up resolution

Modules: `lexicon` (aspects, question words, domain terms: clincite/text/lexicon/), `questions` (what is asked),
`relevance` (which passages and which of their units answer it, on the search scores and the KB's idf), `reasoner`
(the four steps). The report is `clincite.report.extractive`. Every sentence shown is verbatim from a passage that
passed the judge; a part of the question with none is stated as missing; no passage at all means the service
abstains.
"""

from clincite.offline.questions import Ask, analyse
from clincite.offline.reasoner import OFFLINE_NOTICE, OfflineReasoner

__all__ = ["OFFLINE_NOTICE", "Ask", "OfflineReasoner", "analyse"]
