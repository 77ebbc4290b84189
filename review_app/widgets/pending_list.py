"""The pending list: one line per candidate, drawn with Textual's line API.

Why not a DataTable: after a row is removed, a DataTable renders every visible cell again (its line
cache is keyed by row index and an update counter), about 2,600 cell renders over 78 frames in
`benchmarks/tui.py`, 55-86 ms a frame; approve-and-advance removes a row every time. Here each
candidate's line is rendered once into a `Strip` and kept until something shown in it changes (its
mark, lease holder, group head, the width); a frame after a removal only re-styles the cached strips
of the visible lines (cursor and zebra are applied at draw time, so they never invalidate a line).

The widget owns how the list looks: columns for the width, groups under the order, marks, lease
holders, rows kept in place for candidates decided elsewhere, deferred rows, paging state. It never
touches the database: the screen gives it pages and is told (`Highlighted`, `NearEnd`) what the
reviewer did.

Its API is narrow: what it shows is read through read-only views (`candidates`, `marked`, `holders`,
`gone`, `all_loaded`) and changed only through named methods (`show`, `extend`, `remove_row`,
`to_end`, `toggle_mark`, `clear_marks`, `set_holder`, `mark_gone`, `update_row`, `move_cursor`),
each of which redraws exactly the lines it changed; no caller writes its dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType
from typing import ClassVar

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from engine.models import Candidate

from .literal import literal

PREFETCH = 20
"""NearEnd is posted when the cursor comes within this many rows of the last loaded one."""


def age_text(created_at: datetime, now: datetime) -> str:
    seconds = max(0, int((now - created_at).total_seconds()))
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86_400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86_400}d"


def confidence_text(cand: Candidate) -> str:
    """An agent's proposal carries no confidence (None): shown as a dash, never as a made-up 1.00."""
    return "—" if cand.confidence is None else f"{cand.confidence:.2f}"


def group_key(cand: Candidate, sort: str, now: datetime) -> str:
    """The value the list is grouped by under `sort`: shown on a group's first row only."""
    if sort == "user":
        return cand.user_id
    if sort == "kind":
        return cand.kind
    if sort == "confidence":
        return confidence_text(cand)
    return age_text(cand.created_at, now)


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int
    """Cells of text; 0 for the statement, which takes what the others leave."""


COLUMNS: tuple[Column, ...] = (
    Column("mark", "", 1),
    Column("user", "user", 8),
    Column("kind", "kind", 8),
    Column("conf", "conf", 4),
    Column("age", "age", 4),
    Column("statement", "statement", 0),
)
NARROW_COLUMNS: tuple[Column, ...] = (
    Column("mark", "", 1),
    Column("user", "user", 6),
    Column("kind", "kind", 5),
    Column("statement", "statement", 0),
)
"""In the narrow layout the list keeps what tells rows apart: a short kind (so an update never looks
like a new fact) with its ⚠/⚑ markers; confidence and age are in the line below it and the gap tab."""

KIND_LABELS = {"contradiction": "contra", "retraction": "retract", "proposed": "proposed"}
"""Short kind names for the list (the gap pane spells them out), so the statement keeps its room."""
NARROW_KIND = {"new": "new", "update": "upd", "contradiction": "con", "retraction": "ret", "proposed": "prp"}
GROUP_COLUMN = {"age": "age", "user": "user", "kind": "kind", "confidence": "conf"}
MIN_STATEMENT = 12


class PendingList(ScrollView, can_focus=True):
    """The list of pending candidates, with a cursor; see the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", show=False, id="pending.up"),
        Binding("down", "cursor(1)", "Down", show=False, id="pending.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="pending.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="pending.page_down"),
        Binding("home,ctrl+home", "first", "First row", show=False, id="pending.first"),
        Binding("end,ctrl+end", "last", "Last loaded row", show=False, id="pending.last"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "pending-list--header",
        "pending-list--cursor",
        "pending-list--even-row",
    }

    DEFAULT_CSS = """
    PendingList {
        background: $surface;
        color: $foreground;
        scrollbar-size-horizontal: 0;
        & > .pending-list--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .pending-list--even-row {
            background: $surface-lighten-1 50%;
        }
        &:dark > .pending-list--even-row {
            background: $surface-darken-1 40%;
        }
        & > .pending-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .pending-list--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """

    @dataclass
    class Highlighted(Message):
        """The reviewer moved the cursor onto a candidate (None: the list is empty)."""

        candidate_id: int | None

    @dataclass
    class NearEnd(Message):
        """The cursor came near the last loaded row: the screen may load the next page."""

        loaded: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns: tuple[Column, ...] = COLUMNS
        self.sort = "age"
        self.now: datetime | None = None
        self._candidates: dict[int, Candidate] = {}
        self._marked: set[int] = set()
        self._holders: dict[int, str] = {}
        """Candidates leased by another reviewer, and who holds them."""
        self._gone: dict[int, str] = {}
        """Rows kept in place for candidates decided elsewhere under the cursor, and what happened."""
        self._all_loaded = False
        self._order: list[int] = []
        self._index: dict[int, int] = {}
        self._cursor = 0
        self._lines: dict[int, tuple[tuple[object, ...], Strip]] = {}
        """Each candidate's rendered line, with what it was rendered from (redrawn when that changes)."""
        self._header: tuple[int, Strip] | None = None

    # -- reading -----------------------------------------------------------------------------------

    @property
    def candidates(self) -> Mapping[int, Candidate]:
        """The listed candidates by id (read-only)."""
        return MappingProxyType(self._candidates)

    @property
    def marked(self) -> frozenset[int]:
        return frozenset(self._marked)

    @property
    def marked_count(self) -> int:
        return len(self._marked)

    @property
    def holders(self) -> Mapping[int, str]:
        """Rows leased by another reviewer, and who holds each (read-only)."""
        return MappingProxyType(self._holders)

    @property
    def gone(self) -> Mapping[int, str]:
        """Rows kept for candidates decided elsewhere, and what happened (read-only)."""
        return MappingProxyType(self._gone)

    @property
    def all_loaded(self) -> bool:
        """Whether the last page read was the queue's last."""
        return self._all_loaded

    def holder(self, candidate_id: int) -> str | None:
        return self._holders.get(candidate_id)

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def row_ids(self) -> list[int]:
        """The candidate ids in list order."""
        return list(self._order)

    @property
    def cursor_id(self) -> int | None:
        return self._order[self._cursor] if self._order else None

    def index_of(self, candidate_id: int) -> int | None:
        return self._index.get(candidate_id)

    def id_at(self, index: int) -> int | None:
        return self._order[index] if 0 <= index < len(self._order) else None

    def marked_in_order(self) -> list[int]:
        """The marked ids in list order: the order the reviewer saw them in."""
        end = len(self._order)
        return sorted(self._marked, key=lambda cid: self._index.get(cid, end))

    def cells(self, candidate_id: int) -> dict[str, Text]:
        """The cells of a row as shown, by column key."""
        index = self._index[candidate_id]
        return dict(zip((c.key for c in self.columns), self._cells(index), strict=True))

    # -- changing ----------------------------------------------------------------------------------

    def set_narrow(self, narrow: bool) -> None:
        columns = NARROW_COLUMNS if narrow else COLUMNS
        if columns != self.columns:
            self.columns = columns
            self._lines.clear()
            self._header = None
            self.refresh()

    def load(self, rows: Sequence[Candidate], *, sort: str, now: datetime, cursor: int = 0) -> None:
        """Show exactly `rows` (in the order given), the cursor at `cursor`, nobody else's leases."""
        self.show(rows, sort=sort, now=now, cursor=cursor)

    def show(
        self,
        rows: Sequence[Candidate],
        *,
        sort: str,
        now: datetime,
        cursor: int = 0,
        holders: Mapping[int, str] | None = None,
        gone: Mapping[int, str] | None = None,
        all_loaded: bool = True,
    ) -> None:
        """Show exactly `rows` (a fresh read, in the order given), the cursor at `cursor`, with who
        else holds which row and the rows kept for candidates decided elsewhere. Marks on rows still
        listed stay."""
        self.sort, self.now = sort, now
        self._candidates = {c.id: c for c in rows}
        self._order = [c.id for c in rows]
        self._holders = dict(holders or {})
        self._gone = dict(gone or {})
        self._all_loaded = all_loaded
        self._reindex()
        self._marked &= set(self._candidates)
        self._lines = {cid: line for cid, line in self._lines.items() if cid in self._candidates}
        self._cursor = max(0, min(cursor, len(self._order) - 1))
        self._resized()
        self._scroll_to_cursor()
        self.refresh()

    def extend(
        self, rows: Iterable[Candidate], *, holders: Mapping[int, str] | None = None, all_loaded: bool = False
    ) -> None:
        """Append a further page (rows already listed are skipped), with who else holds its rows."""
        self._holders.update(holders or {})
        self._all_loaded = all_loaded
        for cand in rows:
            if cand.id not in self._candidates:
                self._candidates[cand.id] = cand
                self._index[cand.id] = len(self._order)
                self._order.append(cand.id)
        self._resized()
        self.refresh()

    def remove_row(self, candidate_id: int) -> int | None:
        """Take a row out (decided). When it was under the cursor, the cursor stays at its place,
        now on the row that followed; otherwise it stays on its own candidate. Returns the index
        the row had, or None when it was not listed."""
        index = self._index.get(candidate_id)
        if index is None:
            return None
        del self._order[index]
        self._reindex(index)
        self._candidates.pop(candidate_id, None)
        self._marked.discard(candidate_id)
        self._holders.pop(candidate_id, None)
        self._gone.pop(candidate_id, None)
        self._lines.pop(candidate_id, None)
        if index < self._cursor:  # a row above it left: the cursor stays on its candidate
            self._cursor -= 1
        self._cursor = max(0, min(self._cursor, len(self._order) - 1))
        self._resized()
        self._scroll_to_cursor()
        self.refresh()
        return index

    def to_end(self, candidate_id: int) -> None:
        """Move a row to the end of the list (deferred). Moving the row under the cursor leaves
        the cursor at its place, now on the row that followed (the reviewer skipped it); moving
        another row leaves the cursor on the candidate it was on."""
        index = self._index.get(candidate_id)
        if index is None:
            return
        under = self.cursor_id
        del self._order[index]
        self._order.append(candidate_id)
        self._reindex(index)
        if under is not None and under != candidate_id:
            self._cursor = self._index[under]
        self.refresh()

    def toggle_mark(self, candidate_id: int) -> None:
        if candidate_id in self._marked:
            self._marked.discard(candidate_id)
        else:
            self._marked.add(candidate_id)
        self._refresh_row(candidate_id)

    def clear_marks(self) -> None:
        self._marked.clear()
        self.refresh()

    def mark_gone(self, candidate_id: int, what: str, by: str | None = None) -> None:
        """Keep a listed row in place for a candidate found decided elsewhere (by `by`), saying
        what happened: the cursor stays on it and keys act on nothing there."""
        listed = self._candidates.get(candidate_id)
        if listed is not None:
            if by is not None:
                self._candidates[candidate_id] = replace(listed, decided_by=by)
            self._gone[candidate_id] = what
            self._marked.discard(candidate_id)
            self._holders.pop(candidate_id, None)
            self._refresh_row(candidate_id)

    def update_row(self, cand: Candidate) -> None:
        """Show a listed candidate as it is now: its kind or target may have changed since its page
        was read (the engine re-points a candidate when the fact it would replace becomes active)."""
        listed = self._candidates.get(cand.id)
        if listed is None:
            return
        # opening a row leases it (claimed_by/until): not a change the row shows, so no redraw
        if replace(cand, claimed_by=listed.claimed_by, claimed_until=listed.claimed_until) != listed:
            self._candidates[cand.id] = cand
            self._refresh_row(cand.id)

    def set_holder(self, candidate_id: int, holder: str | None) -> None:
        """Say who else holds `candidate_id`'s lease (None: nobody)."""
        if holder is None:
            if self._holders.pop(candidate_id, None) is None:
                return
        else:
            self._holders[candidate_id] = holder
        self._refresh_row(candidate_id)

    def move_cursor(self, index: int) -> None:
        """Put the cursor on row `index` (clamped), as the reviewer's keys and clicks do: when it
        lands on another row, `Highlighted` says so, and `NearEnd` when near the last loaded row."""
        if not self._order:
            return
        index = max(0, min(index, len(self._order) - 1))
        if index != self._cursor:
            old, self._cursor = self._cursor, index
            self._refresh_index(old)
            self._refresh_index(index)
            self.post_message(self.Highlighted(self.cursor_id))
        self._scroll_to_cursor()
        if self._cursor >= len(self._order) - PREFETCH:
            self.post_message(self.NearEnd(len(self._order)))

    # -- the reviewer's keys and mouse ------------------------------------------------------------

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self._cursor + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self._cursor + step * max(1, self._visible_rows() - 1))

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self._order) - 1)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        index = int(self.scroll_y) + offset.y - 1
        if index < len(self._order):
            self.move_cursor(index)

    # -- drawing -----------------------------------------------------------------------------------

    def _visible_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # less the header

    def _reindex(self, start: int = 0) -> None:
        if start == 0:
            self._index = {cid: i for i, cid in enumerate(self._order)}
        else:
            for i in range(start, len(self._order)):
                self._index[self._order[i]] = i

    def _resized(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self._order) + 1)

    def _scroll_to_cursor(self) -> None:
        top, rows = int(self.scroll_y), self._visible_rows()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + rows:
            self.scroll_to(y=self._cursor - rows + 1, animate=False, immediate=True)

    def _refresh_index(self, index: int) -> None:
        self.refresh_lines(index + 1)

    def _refresh_row(self, candidate_id: int) -> None:
        index = self._index.get(candidate_id)
        if index is not None:
            self._refresh_index(index)

    def on_resize(self, event: events.Resize) -> None:
        self._resized()
        self._scroll_to_cursor()

    def _widths(self, width: int) -> list[int]:
        fixed = sum(c.width + 2 for c in self.columns if c.width)
        return [c.width or max(MIN_STATEMENT, width - fixed - 2) for c in self.columns]

    def _cells(self, index: int) -> list[Text]:
        cand = self._candidates[self._order[index]]
        narrow = self.columns is NARROW_COLUMNS
        kind = (NARROW_KIND if narrow else KIND_LABELS).get(cand.kind, cand.kind)
        kind += ("⚠" if cand.unsupported else "") + ("⚑" if cand.flagged_by else "") + ("≈" if cand.marks else "")
        cells = {
            "mark": Text("●" if cand.id in self._marked else "", style="bold"),
            "user": literal(cand.user_id),
            "kind": Text(kind),
            "conf": Text(confidence_text(cand)),
            "age": Text(age_text(cand.created_at, self.now) if self.now is not None else ""),
            "statement": self._statement(cand),
        }
        column = GROUP_COLUMN.get(self.sort)
        continues = self._continues_group(index)
        if continues is not None and column is not None and column in cells:
            if continues:
                cells[column] = Text("")
            else:
                cells[column].stylize("bold")
        return [cells[c.key] for c in self.columns]

    def _continues_group(self, index: int) -> bool | None:
        """Whether row `index` is in the same group as the row above it (its group cell then stays
        empty); None when the list is not grouped (ordered by age)."""
        if self.sort == "age" or self.now is None:
            return None
        if index == 0:
            return False
        previous, cand = self._candidates[self._order[index - 1]], self._candidates[self._order[index]]
        return group_key(previous, self.sort, self.now) == group_key(cand, self.sort, self.now)

    def _statement(self, cand: Candidate) -> Text:
        cell = Text()
        if cand.id in self._gone:
            cell.append_text(literal(f"✓ decided by {cand.decided_by or 'someone else'}: ", "bold green"))
            cell.append_text(literal(cand.statement.replace("\n", " "), "dim strike"))
            return cell
        holder = self._holders.get(cand.id)
        if holder is not None:
            cell.append_text(literal(f"⊘ {holder}: ", "bold yellow"))
        cell.append_text(literal(cand.statement.replace("\n", " ")))
        return cell

    def _line_key(self, index: int, width: int) -> tuple[object, ...]:
        cid = self._order[index]
        return (
            id(self._candidates[cid]),
            width,
            self.columns,
            self.sort,
            self._continues_group(index),
            cid in self._marked,
            self._holders.get(cid),
            self._gone.get(cid),
        )

    def _join(self, cells: Sequence[Text], width: int) -> Strip:
        line = Text(no_wrap=True, overflow="ellipsis", end="")
        for cell, size in zip(cells, self._widths(width), strict=True):
            piece = cell.copy()
            piece.no_wrap = True
            piece.truncate(size, overflow="ellipsis", pad=True)
            line.append(" ")
            line.append_text(piece)
            line.append(" ")
        line.truncate(width, pad=True)
        segments = [s for s in line.render(self.app.console) if s.text != "\n"]
        return Strip(Segment.adjust_line_length(segments, width), width)

    def _row_strip(self, index: int, width: int) -> Strip:
        cid = self._order[index]
        key = self._line_key(index, width)
        cached = self._lines.get(cid)
        if cached is not None and cached[0] == key:
            return cached[1]
        strip = self._join(self._cells(index), width)
        self._lines[cid] = (key, strip)
        return strip

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            if self._header is None or self._header[0] != width:
                labels = [Text(c.label) for c in self.columns]
                self._header = (width, self._join(labels, width))
            return self._header[1].apply_style(base + self.get_component_rich_style("pending-list--header"))
        index = int(self.scroll_y) + y - 1
        if index >= len(self._order):
            return Strip.blank(width, base)
        style = base
        if index % 2 == 0:
            style += self.get_component_rich_style("pending-list--even-row")
        if index == self._cursor:
            style += self.get_component_rich_style("pending-list--cursor")
        return self._row_strip(index, width).apply_style(style)
