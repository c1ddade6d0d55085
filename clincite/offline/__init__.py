"""Offline mode: an honest extractive answerer on typed inputs, behind the same interface as the LLM agents.

    reasoner = OfflineReasoner()            # clincite.question.reasoner.Reasoner, like LLMReasoner
    ask = analyse("哪些孩子不适合验配角膜塑形镜？")      # topic terms, aspects (禁忌证), follow-up resolution

Modules: `lexicon` (aspects and domain terms, lexicon/aspects.json), `questions` (what is asked), `passages` (which
sentences pass the relevance floor for it), `report` (the extractive report), `reasoner` (the four steps).
Every sentence it shows is verbatim from a passage that passed the floor; an aspect with none is stated as missing;
no passage at all means the service abstains.
"""

from clincite.offline.questions import Ask, analyse
from clincite.offline.reasoner import OFFLINE_NOTICE, OfflineReasoner

__all__ = ["OFFLINE_NOTICE", "Ask", "OfflineReasoner", "analyse"]
