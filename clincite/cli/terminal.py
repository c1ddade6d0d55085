"""The terminal renderer: the same event stream the web app draws, printed as steps and a streamed report."""

from __future__ import annotations

import sys

from clincite.core.naming import display_source
from clincite.core.shapes import (
    STAGE_LABELS,
    AnswerDone,
    AnswerToken,
    DecompositionReady,
    DegradedEvent,
    Event,
    JudgementDone,
    NoticeEvent,
    PathChosen,
    SearchDone,
    Stage2Started,
    StageFinished,
    StageStarted,
    SubQueryRewritten,
    SufficiencyReady,
)


class TerminalRenderer:
    """Prints the event stream: the steps as they happen, then the streamed report and its citations."""

    def __init__(self, out=sys.stdout):
        self.out = out
        self._answering = False
        self._held: list[str] = []  # steps that end while the report streams: printed after it, not inside it

    def _step(self, line: str) -> None:
        if self._answering:
            self._held.append(line)
        else:
            self.out.write(line)

    def __call__(self, event: Event) -> None:
        write = self._step
        match event:
            case NoticeEvent(message=message):
                write(f"【提示】{message}\n")
            case StageStarted(stage="answer"):
                write("\n──── 回答 ────\n")
                self._answering = True
            case StageStarted(label=label):
                write(f"▶ {label}…\n")
            case StageFinished(stage=stage, seconds=seconds) if stage != "answer":
                write(f"✓ {STAGE_LABELS[stage]}（{seconds:.2f} 秒）\n")
            case DecompositionReady(sub_queries=subs, merged=merged):
                for sq in subs:
                    after = f"，依赖 {sq.depends_on} 的答案" if sq.depends_on else ""
                    write(f"  · {sq.id} {sq.text}（{sq.focus}{after}）\n")
                for m in merged:
                    write(f"  · 与 {m.into} 重复，已合并：{m.text}\n")
            case PathChosen(label=label, reason=reason):
                write(f"◆ {label}：{reason}\n")
            case SubQueryRewritten(original=before, rewritten=after, bridge=bridge):
                how = f"用 {before.depends_on} 的答案“{bridge}”改写为" if bridge else "前一步没有找到答案，按原句检索："
                write(f"  · {after.id}：{before.text} → {how}{after.text}\n")
            case SearchDone(sub_query=sq, hits=hits):
                sources = "、".join(dict.fromkeys(display_source(h.source) for h in hits[:3])) or "无"
                write(f"  · 检索 {sq.id}：{len(hits)} 段（{sources}）\n")
            case JudgementDone(analysis=a):
                write(f"  · 判断 {a.sub_query.id}：{len(a.extracts)} 条摘录，置信度 {a.confidence}\n")
            case SufficiencyReady(verdict=v):
                write(f"  · {'证据充分' if v.sufficient else '证据不足，进入第二阶段检索'}：{v.reasoning}\n")
            case Stage2Started(sub_queries=subs):
                write("  · 追加子查询：" + "；".join(sq.text for sq in subs) + "\n")
            case DegradedEvent(degradation=d):
                write(f"【降级】{d.message}\n")
            case AnswerToken(text=text):
                self.out.write(text)
            case AnswerDone(result=r):
                self._answering = False
                if self._held:
                    write("\n\n" + "".join(self._held).rstrip("\n"))
                    self._held = []
                write("\n──── 引用核验 ────\n")
                for c in r.citations:
                    mark = "✓ 原文已核验" if c.verified else "✗ 未在来源中找到此原文"
                    write(f"【{c.number}】《{c.source}》{mark}\n")
                t = r.timings
                write(
                    f"\n首字 {t.get('ttft', 0):.2f} 秒，总计 {t.get('total', 0):.2f} 秒，模式 {r.mode}"
                    f"{'（缓存）' if r.cached else ''}\n"
                )
        self.out.flush()
