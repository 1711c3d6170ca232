"""`hierarchical`: summaries of summaries, at three scales.

Source: seed 003 ("hierarchical summarization": raw messages checkpointed every 20 turns,
checkpoints re-summarised every 5 into an epoch, epochs every 5 into a longer summary; each
request is rebuilt from the newest higher-level summary, the lower-level summaries since it and
the raw messages since the last checkpoint).

Levels: 0 raw messages; 1 checkpoint, made when `checkpoint_every` raw turns have piled up since
the last summary (all of them, the newest turn's tool results included: seed 003 compacts at the
start of the next turn so the last result is summarised too); 2 epoch, made when `epoch_every`
checkpoints are in the context (they are folded into it); 3 era, made when `era_every` epochs are
in the context. The top level rolls: a new era summary also folds in the previous one, so one era
summary always covers everything before the epochs. The context is therefore
[era] [epochs since it] [checkpoints since the last epoch] [raw turns since the last checkpoint],
with pinned messages left where they are. `epoch_every=0` or `era_every=0` stops the hierarchy
at that level (summaries of the level below then accumulate).

Each summary made is a side call (kind "summarize"): input = what it summarised plus the
instruction prompt, output = the summary. One request may cascade (the checkpoint that completes
an epoch): that is one event, named after the highest level made, with one call per summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ctxsim.model import Message
from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Edit, Item, SideCall, Summarize, View
from ctxsim.policies.compact import SummaryParams, current_notes, protected, safe_cut, summarise_items
from ctxsim.summarizers import TurnClock, make_summarizer

LEVELS = {1: "checkpoint", 2: "epoch", 3: "era"}
TAGS = {n: frozenset({"summary", f"level{n}"}) for n in LEVELS}


def level_of(item: Item) -> int:
    for n in (3, 2, 1):
        if f"level{n}" in item.tags:
            return n
    return 0


@dataclass(frozen=True)
class HierarchicalParams(SummaryParams):
    checkpoint_every: int = field(default=20, metadata=field_doc("raw turns folded into one checkpoint"))
    epoch_every: int = field(default=5, metadata=field_doc("checkpoints folded into one epoch (0: no epochs)"))
    era_every: int = field(default=5, metadata=field_doc("epochs folded into the era summary (0: no eras)"))

    def __post_init__(self) -> None:
        if self.checkpoint_every < 1:
            raise ValueError("checkpoint_every must be at least 1")
        if self.epoch_every < 0 or self.era_every < 0 or self.epoch_every == 1 or self.era_every == 1:
            raise ValueError("epoch_every and era_every must be 0 (off) or at least 2")


class HierarchicalPolicy:
    """Keeps, per session, the summaries it made, so a request finds the newest one without a scan.

    The summaries only this policy writes (tagged `levelN`) always end up after every summary still
    in the context, so the newest live one is the last made that is still there. A request then
    counts the raw turns after it: O(raw messages since the last summary). Only when a checkpoint
    is due does it look at the whole context (the summaries to fold, the protected messages).
    `observe` tells it which item the engine made of the summary it returned.
    """

    name = "hierarchical"

    def __init__(self, params: HierarchicalParams) -> None:
        self.params = params
        p = params
        self._clock = TurnClock()
        self._made: list[Item] = []  # summaries this policy put in the history, oldest first
        self._writing: Message | None = None  # the summary it returned last, until the engine puts it in
        self.summarizer = make_summarizer(
            p.summarizer, max_errors=p.max_errors, max_files=p.max_files, summary_tokens=p.summary_tokens,
            summary_ratio=p.summary_ratio, summary_min_tokens=p.summary_min_tokens,
            summary_max_tokens=p.summary_max_tokens)

    def start(self) -> None:
        self._clock, self._made, self._writing = TurnClock(), [], None

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        self._clock.observe(removed, added)
        if self._writing is not None:
            for item in added:
                if item.message is self._writing:
                    self._made.append(item)
                    self._writing = None

    def _last_summary(self) -> int:
        """Index of the newest summary in the context, -1 when there is none."""
        made = self._made
        while made and not made[-1].alive:
            made.pop()
        return made[-1].pos if made else -1

    def decide(self, view: View) -> Sequence[Edit]:
        p = self.params
        items = view.items
        last_summary = self._last_summary()
        # Raw turns since the last summary: cut after the checkpoint_every-th of them.
        seen = 0
        cut = len(items)
        for i in range(last_summary + 1, len(items)):
            if items[i].message.role == "assistant":
                seen += 1
                if seen == p.checkpoint_every + 1:
                    cut = i
                    break
        if seen < p.checkpoint_every:
            return ()
        levels: dict[int, list[int]] = {1: [], 2: [], 3: []}
        for item in sorted((it for it in self._made if it.alive), key=_position):
            levels[level_of(item)].append(item.pos)
        while cut > last_summary + 1 and items[cut - 1].message.role == "user" and cut < len(items):
            cut -= 1  # a turn's prompt stays with the turn
        cut = max(safe_cut(view, cut), last_summary + 1)
        keep = protected(view, last_summary + 1, cut)
        raw = [i for i in range(last_summary + 1, cut) if i not in keep]
        if not raw:
            return ()
        notes = current_notes(view) if p.include_notes else ""
        removed = set(raw)
        made = summarise_items(view, self.summarizer, self._clock, [items[i] for i in raw], notes, tags=TAGS[1],
                               note=f"checkpoint of {len(raw)} messages")
        calls: list[SideCall] = [made.call] if made.call else []
        top = 1
        for level, every in ((2, p.epoch_every), (3, p.era_every)):
            below = levels[level - 1]
            if not every or len(below) + 1 < every:
                break
            folded = list(below)
            if level == 3:
                folded = levels[3] + folded  # the top level rolls: the previous era is folded in too
            parts = [items[i] for i in folded] + [made.item]
            made = summarise_items(view, self.summarizer, self._clock, parts, notes, tags=TAGS[level],
                                   note=f"{LEVELS[level]} of {len(parts)} summaries")
            if made.call:
                calls.append(made.call)
            removed.update(folded)
            top = level
        self._made = [it for it in self._made if it.alive and it.pos not in removed]
        self._writing = made.item.message
        note = f"{LEVELS[top]}: {len(raw)} messages" + (f" and {len(removed) - len(raw)} summaries"
                                                         if len(removed) > len(raw) else "")
        change = Summarize(tuple(items[i] for i in sorted(removed)), made.item.message, tokens=made.item.tokens,
                           tags=made.item.tags)
        return (Edit(LEVELS[top], (change,), note, tuple(calls)),)


def _position(item: Item) -> int:
    return item.pos


class HierarchicalReference(HierarchicalPolicy):
    """`hierarchical` with no memory of its summaries: at every request they are found in the context by
    their level tags (its turn clock, which only numbers what was appended, is the policy's own). What
    `HierarchicalPolicy`, which keeps the summaries it made, must match."""

    def decide(self, view: View) -> Sequence[Edit]:
        self._made = [item for item in view.items if level_of(item)]
        return super().decide(view)


REFERENCE = HierarchicalReference


register(PolicyInfo(
    "hierarchical", HierarchicalParams, HierarchicalPolicy,
    "seed 003 hierarchical summarization (checkpoints every 20 turns, epochs, summaries of epochs)",
    "fold raw turns into checkpoints, checkpoints into epochs, epochs into an era summary", __name__,
    weight=2.6))
