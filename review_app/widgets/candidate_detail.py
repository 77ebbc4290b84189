"""The right side of the Queue screen: what the model predicted, what the user actually said, and
the gap between them, for one candidate.

The three panes sit side by side when there is room and become tabs on a narrow terminal. Their
content is built by pure functions (`prediction_text`, `messages_text`, `gap_text`) from a
`CandidateContext`, so the rendering rules (literal text, evidence highlight, word diff) can be
read and tested without a running app.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from engine.models import Candidate, CandidateContext, Knowledge

from .literal import literal, visible

COLD_START = "cold start — nothing to predict from"

PANES: tuple[tuple[str, str], ...] = (
    ("prediction", "Prediction"),
    ("messages", "Original messages"),
    ("gap", "Surprise gap"),
)

TAB_TITLES: dict[str, str] = {"prediction": "Prediction", "messages": "Messages", "gap": "Gap"}
"""The narrow layout's tab titles: the three long pane titles need 47 columns, more than the detail
column has at 80x24, and Textual then scrolled the tab row so the first read "iction"."""


MARK_LABELS: dict[str, str] = {
    "looks_like": "Looks like",
    "near_tombstone": "Near reject",
    "may_replace": "May replace",
}


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "—"


def interval_text(valid_at: datetime | None, invalid_at: datetime | None) -> str:
    start = valid_at.date().isoformat() if valid_at else "always"
    end = invalid_at.date().isoformat() if invalid_at else "until further notice"
    return f"{start} → {end}"


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One value in a chain of replacements: the active fact it starts from, or a pending candidate."""

    statement: str
    status: str
    """'active', 'superseded' ... for the fact; 'pending' for a candidate."""
    start: datetime | None
    candidate_id: int | None = None
    fact_id: int | None = None


def day_text(value: datetime | None) -> str:
    return "always" if value is None else f"{value.day} {value:%b %Y}"


def chain_text(chain: Sequence[ChainLink], current: int | None) -> Text:
    """ "Lisbon, active fact #1, from 5 Jan 2026 → ▶ Porto, pending #31, from 2 May 2026": each value
    with its status and start, the shown candidate marked."""
    out = Text()
    for i, link in enumerate(chain):
        if i:
            out.append(" → ", style="bold")
        here = link.candidate_id is not None and link.candidate_id == current
        if here:
            out.append("▶ ", style="bold")
        out.append_text(literal(link.statement, "bold" if here else ""))
        what = f"{link.status} fact #{link.fact_id}" if link.fact_id is not None else f"pending #{link.candidate_id}"
        out.append(f", {what}, from {day_text(link.start)}", style="dim")
    return out


def prediction_text(ctx: CandidateContext) -> Text:
    cand = ctx.candidate
    if cand.run_id is None:
        origin = cand.created_by or "someone"
        what = "a retraction request" if cand.kind == "retraction" else "a proposal"
        return Text.assemble(
            (f"Not from extraction: {what} by ", "italic"),
            literal(origin, "italic"),
            ("; there was no prediction.", "italic"),
        )
    if not ctx.prediction.strip() or ctx.mode == "cold_start":
        return Text(COLD_START, style="italic")
    out = Text()
    out.append("The model expected, from what was already known:\n\n", style="dim")
    out.append_text(literal(ctx.prediction))
    # pending candidates are shown to the extractor beside facts, under negative ids: listed apart,
    # so a candidate nobody has approved is never read as one of the facts already known
    facts = [k for k in ctx.existing if k.id > 0 and k.status != "pending"]
    waiting = [k for k in ctx.existing if not (k.id > 0 and k.status != "pending")]
    if facts:
        out.append("\n\nPredicted from these facts:\n", style="dim")
        for fact in facts:
            out.append(f"  #{fact.id} ", style="dim")
            out.append_text(literal(fact.described()))
            out.append("\n")
    if waiting:
        gap = "\n" if facts else "\n\n"  # the list of facts above ends its last line already
        out.append(f"{gap}Beside these candidates, still pending review (not facts):\n", style="dim")
        for other in waiting:
            out.append(f"  candidate #{abs(other.id)} ", style="dim")
            out.append_text(literal(other.described()))
            out.append("\n")
    return out


def _highlight(text: Text, needle: str) -> None:
    """Mark every case-insensitive occurrence of the evidence quote in a message."""
    if not needle.strip():
        return
    plain = text.plain.casefold()
    target = visible(needle).casefold()
    start = plain.find(target)
    while start != -1:
        text.stylize("bold black on yellow", start, start + len(target))
        start = plain.find(target, start + len(target))


def messages_text(ctx: CandidateContext) -> Text:
    cand = ctx.candidate
    if not ctx.messages:
        out = Text("No source messages: this candidate did not come from a conversation.", style="italic")
        if cand.reason:
            out.append("\n\nReason given: ", style="dim")
            out.append_text(literal(cand.reason))
        return out
    out = Text()
    for i, message in enumerate(ctx.messages):
        if i:
            out.append("\n\n")
        if message.role == "user":
            out.append(f"▌ USER  {_when(message.at)}\n", style="bold cyan")
            body = literal(message.content)
        else:
            out.append(f"▌ assistant  {_when(message.at)}\n", style="magenta")
            body = literal(message.content, "dim")
        if message.role == "user":
            _highlight(body, cand.evidence)
        out.append_text(body)
    return out


def word_diff(old: str, new: str) -> tuple[Text, Text]:
    """The old and the new statement with removed words struck red and added words green."""
    a, b = visible(old).split(), visible(new).split()
    old_t, new_t = Text(), Text()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        left, right = " ".join(a[i1:i2]), " ".join(b[j1:j2])
        if tag == "equal":
            old_t.append(left + " ")
            new_t.append(right + " ")
            continue
        if left:
            old_t.append(left, style="bold red strike")
            old_t.append(" ")
        if right:
            new_t.append(right, style="bold green underline")
            new_t.append(" ")
    old_t.rstrip()
    new_t.rstrip()
    return old_t, new_t


def _field(out: Text, label: str, value: Text | str) -> None:
    out.append(f"{label:<12}", style="dim")
    out.append_text(value if isinstance(value, Text) else Text(value))
    out.append("\n")


def gap_text(ctx: CandidateContext, chain: Sequence[ChainLink] = ()) -> Text:
    cand: Candidate = ctx.candidate
    old: Knowledge | None = ctx.superseded
    out = Text()
    if sum(1 for link in chain if link.candidate_id is not None) > 1:
        out.append("Chain (l jumps to the next link)\n", style="dim")
        out.append_text(chain_text(chain, cand.id))
        out.append("\n\n")
    if cand.kind == "retraction":
        out.append("Retraction request: approving (a) retracts this fact\n\n", style="bold")
        if old is not None:
            _field(out, "Fact", Text(f"#{old.id} · {old.status}"))
            out.append_text(literal(old.statement, "bold"))
            out.append("\n\n")
            _field(out, "Valid", interval_text(old.valid_at, old.invalid_at))
        else:
            out.append_text(literal(cand.statement, "bold"))
            out.append("\n\n")
        if cand.reason:
            _field(out, "Reason", literal(cand.reason))
        _field(out, "Requested", literal(cand.created_by or "—"))
        return out
    if cand.kind in ("update", "contradiction") and old is not None:
        old_t, new_t = word_diff(old.statement, cand.statement)
        label = "Old fact" if old.status == "active" else f"Old fact ({old.status})"
        out.append(f"{label}  #{old.id}\n", style="dim")
        out.append_text(old_t)
        out.append("\n")
        out.append("New\n", style="dim")
        out.append_text(new_t)
        out.append("\n\n")
    else:
        out.append_text(literal(cand.statement, "bold"))
        out.append("\n\n")
    _field(out, "Kind", cand.kind)
    for mark in cand.marks:  # what the intake noticed and left to a person (engine.gate): never auto-approved
        _field(out, MARK_LABELS.get(mark.kind, "Marked"), literal(f"≈ {mark.note}", "bold yellow"))
    if cand.category is not None:  # a special category (GDPR art. 9): a person always decides
        _field(out, "Category", Text(f" {cand.category.replace('_', ' ')} ", style="bold black on magenta"))
    confidence = Text("—" if cand.confidence is None else f"{cand.confidence:.2f}")
    if cand.confidence is not None and cand.confidence < 0.75:
        confidence.stylize("yellow")
    _field(out, "Confidence", confidence)
    _field(out, "Valid", interval_text(cand.valid_at, cand.invalid_at))
    if cand.unsupported:
        _field(out, "Evidence", Text("⚠ unsupported: the quote is not in the user's messages", style="bold yellow"))
    if cand.evidence:
        _field(out, "Quote", literal(cand.evidence, "italic"))
    if cand.kind == "proposed":
        _field(out, "Proposed by", literal(cand.created_by or "—"))
    return out


class CandidateDetail(Widget):
    """Three titled panes for the selected candidate; tabs when `narrow`."""

    DEFAULT_CSS: ClassVar[str] = ""
    narrow: reactive[bool] = reactive(False, recompose=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.context: CandidateContext | None = None
        self.chain: list[ChainLink] = []
        self.placeholder = "Select a candidate."

    def compose(self) -> ComposeResult:
        if self.narrow:
            # The gap (the statement being decided) opens first: the narrow list has no room for it.
            with TabbedContent(id="detail-tabs", initial="tab-gap"):
                for key, _ in PANES:
                    with TabPane(TAB_TITLES[key], id=f"tab-{key}"), VerticalScroll(classes="pane"):
                        yield Static(id=f"pane-{key}", classes="pane-body")
        else:
            with Horizontal(id="detail-panes"):
                for key, title in PANES:
                    scroll = VerticalScroll(classes="pane", id=f"scroll-{key}")
                    scroll.border_title = title
                    with scroll:
                        yield Static(id=f"pane-{key}", classes="pane-body")

    def on_mount(self) -> None:
        self._render_context()

    def watch_narrow(self) -> None:
        self.call_after_refresh(self._render_context)

    def show(
        self, ctx: CandidateContext | None, placeholder: str = "Select a candidate.", chain: Sequence[ChainLink] = ()
    ) -> None:
        self.context = ctx
        self.chain = list(chain)
        self.placeholder = placeholder
        self._render_context()

    def _render_context(self) -> None:
        bodies = self.query(".pane-body").results(Static)
        panes = {b.id: b for b in bodies}
        if not panes:
            return
        ctx = self.context
        if ctx is None:
            texts = {"prediction": Text(self.placeholder, style="dim"), "messages": Text(""), "gap": Text("")}
        else:
            texts = {
                "prediction": prediction_text(ctx),
                "messages": messages_text(ctx),
                "gap": gap_text(ctx, self.chain),
            }
        for key, text in texts.items():
            pane = panes.get(f"pane-{key}")
            if pane is not None:
                pane.update(text)
