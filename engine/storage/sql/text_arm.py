"""The text arm of retrieval: per-user BM25 over FTS5 (SQLite) or a tsvector index (PostgreSQL),
with MaxScore for large users, and the belief rule both arms apply before their LIMIT.

`TextArmOps` is mixed into `SqlTx`; what only a backend can do (count a term's rows, read the rows
holding some terms, say whether anything was committed) is declared here and written in
engine/storage/sqlite/tx.py and engine/storage/postgres/tx.py. Moved out of sql/tx.py (issue 21):
the scoring is the same, statement for statement.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from .conn import SqlConn

STILL_TRUE_SQL = (
    "CASE WHEN {k}.status = 'active' OR ({k}.status = 'superseded'"
    " AND {k}.end_reason IN ('superseded', 'contradicted')) THEN 1 ELSE 0 END"
)
"""1 when a fact is still believed true for its valid period: active, or superseded because the
world changed (end_reason superseded / contradicted). 0 when it was ended as wrong: corrected, or
retracted (whose end_reason is the free-text reason, so the status is tested too). The one
definition, used in SQL by both backends' schemas, their vector arms and the text arm."""


BM25_K1 = 1.2  # FTS5's own bm25() parameters, so the scores mean what they meant before
BM25_B = 0.75
_IDF_FLOOR = 1e-6  # FTS5's floor for a term in half or more of the documents


def _belief_filter(at_time: int | None, known_at: int | None, include_expired: bool) -> tuple[str, list[Any]]:
    """The status and time predicates of the text arm, as one SQL condition on `k`.

    The belief rule (the README's "valid time and belief time"):
      - neither time: current belief, active facts only;
      - `at_time` alone: facts still believed true for their period (active, or ended because the
        world changed: superseded, contradicted), never those ended as wrong (corrected,
        retracted), whose valid interval holds at_time;
      - `known_at`: what the store held then (created <= known_at < expired); with `at_time` too,
        the valid interval as it was believed then (before a later supersession closed it);
      - `include_expired` (without known_at): no belief filter at all."""
    where: list[str] = []
    args: list[Any] = []
    if known_at is not None:
        where.append("k.created_at <= ? AND (k.expired_at IS NULL OR k.expired_at > ?)")
        args += [known_at, known_at]
    elif not include_expired:
        where.append(STILL_TRUE_SQL.format(k="k") + " = 1" if at_time is not None else "k.status = 'active'")
    if at_time is not None:
        end = (
            "CASE WHEN k.valid_closed = 1 THEN k.prior_invalid_at ELSE k.invalid_at END"
            if known_at is not None
            else "k.invalid_at"
        )
        where.append(f"(k.valid_at IS NULL OR k.valid_at <= ?) AND ({end} IS NULL OR {end} > ?)")
        args += [at_time, at_time]
    return (" AND ".join(where) or "1"), args


_FTS_TOKEN = re.compile(r"[^\W_]+")


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def fts_tokens(text: str) -> list[str]:
    """The tokens FTS5's `unicode61 remove_diacritics 2` tokenizer sees: runs of letters and
    digits (not `_`), casefolded, diacritics removed. Used to find the query's terms in a
    statement for the per-user BM25; FTS5 itself still decides which rows match."""
    folded = text.casefold()
    return _FTS_TOKEN.findall(folded if folded.isascii() else _fold(folded))


# A statement's length for BM25, in words (runs of non-spaces), counted in SQL: the same measure
# for a row's length and the user's average, without tokenizing every statement in Python.
_WORDS = "length(trim(k.statement)) - length(replace(trim(k.statement), ' ', '')) + 1"


COMMON_TERM_MIN_FACTS = 1000


def _essential_terms(bounds: dict[str, float], threshold: float) -> list[str]:
    """The terms whose rows must still be read (MaxScore's "essential" terms). `bounds` holds each
    unread term's upper bound, idf * (k1 + 1) (the score of one term as its frequency grows
    without end); `threshold`, the lowest score in the current top list (0 while it is short).
    The terms with the smallest bounds whose bounds add up to LESS than the threshold can be left
    out: a row holding only those scores strictly below every row already listed. Empty when the
    whole list is settled."""
    total, skipped = 0.0, 0
    for bound in sorted(bounds.values()):
        if total + bound >= threshold:
            break
        total += bound
        skipped += 1
    return [t for t, _ in sorted(bounds.items(), key=lambda kv: (kv[1], kv[0]))[skipped:]]


def _informative(stats: _UserStats, terms: list[str], tokens: dict[str, list[str]]) -> list[str]:
    """`informative_terms`' rule on statistics already read (`tokens`: each term's search tokens,
    all counted in `stats`)."""
    if stats.docs < 2 * COMMON_TERM_MIN_FACTS:
        return terms
    return [t for t in terms if all(2 * stats.terms[x] < stats.docs for x in tokens[t])]


class _UserStats:
    """One user's BM25 statistics as of one store generation: their fact count, the total of their
    statements' lengths in tokens, and the document frequency of each term asked about so far."""

    __slots__ = ("docs", "generation", "terms", "tokens", "top")

    def __init__(self, generation: Any, docs: int, top: int, tokens: int) -> None:
        # tokens: the total length of the user's statements, in words (`_WORDS`)
        self.generation, self.docs, self.top, self.tokens = generation, docs, top, tokens
        self.terms: dict[str, int] = {}

    @property
    def avgdl(self) -> float:
        return max(self.tokens / self.docs, 1.0) if self.docs else 1.0


class TextArmOps(Protocol):
    """Mixed into SqlTx: `conn` is the transaction's connection and `text_stats` the store's
    per-connection cache of BM25 statistics (see SqlTx)."""

    conn: SqlConn
    text_stats: dict[str, _UserStats]

    async def user_text_stats(self, user_id: str, terms: Sequence[str] = ()) -> _UserStats:
        """This user's statistics for the text arm, with the document frequency of each of `terms`
        (search tokens): only this user's facts are counted, all of them whatever their status.
        Cached per connection while `store_generation()` says nothing was written since."""
        generation = await self.store_generation()
        cache = self.text_stats
        stats = cache.get(user_id)
        if stats is None or generation is None or stats.generation != generation:
            row = await (
                await self.conn.execute(
                    "SELECT count(*), coalesce(max(id), 0) FROM knowledge WHERE user_id = ?", (user_id,)
                )
            ).fetchone()
            n, top = int(row[0]), int(row[1])
            if stats is not None and (
                (stats.docs, stats.top) == (n, top)
                or (n >= 2 * COMMON_TERM_MIN_FACTS and abs(stats.docs - n) * 100 <= n)
            ):
                tokens = stats.tokens * n // max(stats.docs, 1)
                known = stats.terms if (stats.docs, stats.top) == (n, top) else {}  # no fact added or removed
            else:
                row = await (
                    await self.conn.execute(
                        f"SELECT coalesce(sum({_WORDS}), 0) FROM knowledge k WHERE k.user_id = ?", (user_id,)
                    )
                ).fetchone()
                tokens = int(row[0])
                known = {}
            if len(cache) > 10_000:
                cache.clear()
            cache[user_id] = stats = _UserStats(generation, n, top, tokens)
            stats.terms.update(known)
        await self._count_terms(user_id, stats, terms)
        return stats

    async def _count_terms(self, user_id: str, stats: _UserStats, terms: Sequence[str]) -> None:
        """Fill in the document frequencies of `terms` not yet in `stats`, in one statement."""
        missing = [t for t in dict.fromkeys(terms) if t not in stats.terms]
        if missing:
            stats.terms.update(zip(missing, await self.term_documents(user_id, missing), strict=True))

    @abstractmethod
    async def store_generation(self) -> Any:
        """A value that changes whenever anything was committed since it was last read, or None
        when the backend cannot tell cheaply (then the statistics are counted again each query)."""

    @abstractmethod
    async def term_documents(self, user_id: str, terms: Sequence[str]) -> list[int]:
        """For each search token of `terms`, how many of this user's facts (any status) hold it:
        one statement for all of them (a round trip each was most of a small user's query on
        PostgreSQL)."""

    @abstractmethod
    async def text_rows(
        self,
        user_id: str,
        terms: Sequence[str],
        condition: str,
        args: Sequence[Any],
        excluding: Sequence[str] = (),
    ) -> list[tuple[int, str, int]]:
        """(id, statement, length in words) of the user's facts holding ANY of the search tokens
        `terms` and NONE of `excluding` (rows the text arm has already scored) that satisfy
        `condition` (the belief filter on `k`, with its `args`)."""

    async def text_arm(
        self,
        user_id: str,
        terms: list[str],
        limit: int,
        *,
        at_time: int | None,
        known_at: int | None,
        include_expired: bool,
        informative: bool = False,
        min_score: float = 0.0,
    ) -> list[int]:
        """BM25 over this user's facts only, with this user's statistics.

        `informative=True` first drops the terms `informative_terms` drops, with the SAME
        statistics (retrieval's path: one look at the store generation instead of two).
        `min_score`: rows scoring below it are left out (retrieval's relevance floor: a row
        matched only by terms at the floor IDF, in half or more of the user's facts, is no
        evidence that it answers the question).

        FTS5's own bm25() counts document frequencies and the average length over the whole table,
        every user's rows included: 300 facts of another user holding a word lowered that word's IDF
        for everyone, reordering this user's results and telling an agent what other users' facts
        contain. So the scores are computed here, per user (`user_text_stats`: the user's fact count,
        average length and each term's document frequency, each counted by FTS5 with the user's scope
        token INSIDE the MATCH, so no other user's row is even visited). The index then finds the
        user's rows holding any of the terms that pass the status and time predicates, all before the
        LIMIT (for a large user in two steps that skip rows which cannot reach the list); the query's
        terms are found in each row's statement as FTS5's tokenizer would find them (the term
        frequencies), and its length is counted in words. The formula and parameters are FTS5's
        (k1 = 1.2, b = 0.75, IDF floored at 1e-6); the order, best first, ties by id."""
        tokens = {t: fts_tokens(t) for t in terms}
        wanted = list(dict.fromkeys(token for term in terms for token in tokens[term]))
        if not wanted:
            return []
        stats = await self.user_text_stats(user_id, wanted)
        if informative:
            kept = _informative(stats, terms, tokens)
            wanted = list(dict.fromkeys(token for term in kept for token in tokens[term]))
        n, avgdl = stats.docs, stats.avgdl
        wanted = [t for t in wanted if stats.terms[t]]
        if not wanted:
            return []
        weight = {t: max(math.log((n - stats.terms[t] + 0.5) / (stats.terms[t] + 0.5)), _IDF_FLOOR) for t in wanted}
        condition, args = _belief_filter(at_time, known_at, include_expired)
        # The terms as FTS5 found them: whole words of the casefolded, diacritic-free statement. (An
        # underscore joins words for `\b` but not for FTS5; a row matched only across one scores 0.)
        find = re.compile(r"\b(?:" + "|".join(map(re.escape, wanted)) + r")\b").findall
        # Statements repeat their shapes: a score depends only on (length, the terms found), so it is
        # computed once per shape, not once per row.
        memo: dict[tuple[Any, ...], float] = {}
        scored: list[tuple[float, int]] = []

        def score(rows: list[tuple[int, str, int]]) -> None:
            for kid, statement, words in rows:
                folded = statement.casefold()
                shape = (words, *find(folded if folded.isascii() else _fold(folded)))
                value = memo.get(shape)
                if value is None:
                    norm = BM25_K1 * (1 - BM25_B + BM25_B * words / avgdl)
                    counts = Counter(shape[1:])
                    value = memo[shape] = sum(weight[t] * f * (BM25_K1 + 1) / (f + norm) for t, f in counts.items())
                scored.append((-value, kid))

        rarest, *rest = sorted(wanted, key=lambda t: (stats.terms[t], t))
        if n < COMMON_TERM_MIN_FACTS or sum(stats.terms[t] for t in rest) <= 2 * stats.terms[rarest]:
            # a small user, or terms about as rare as each other: one statement reads them all
            score(await self.text_rows(user_id, wanted, condition, args))
        else:
            # A large user asking common words beside a rare one: the rows of the rarest term
            # first, then only the rows a still-missing term could lift into the top `limit`
            # (`_essential_terms`): a row holding none of the terms read so far scores less than
            # the sum of its terms' bounds, so once that sum is below the `limit`-th score so far,
            # its terms need not be read. The result is the same as scoring every matching row;
            # "likes jazz" reads the 830 rows with "jazz", not the 3,000 with "likes". (When the
            # other terms hold no more than twice the rarest one's rows, the second statement
            # would cost more than the rows it could save.)
            score(await self.text_rows(user_id, [rarest], condition, args))
            threshold = -heapq.nsmallest(limit, scored)[-1][0] if len(scored) >= limit else 0.0
            if needed := _essential_terms({t: weight[t] * (BM25_K1 + 1) for t in rest}, threshold):
                score(await self.text_rows(user_id, needed, condition, args, excluding=[rarest]))
        return [kid for value, kid in heapq.nsmallest(limit, scored) if -value >= min_score]

    async def informative_terms(self, user_id: str, terms: list[str]) -> list[str]:
        """Drop the query terms found in at least half of THIS user's facts, when the user has at
        least 2 * COMMON_TERM_MIN_FACTS of them. Such a term gets the floor IDF (1e-6): it cannot
        reorder the facts that match a real term, yet every fact of the user holding it would be
        scored. Statements all phrased "User lives in...", queried with "where does the user live",
        made the text arm rank all 22,000 facts of a large user; without "user" it ranks the few
        hundred that mention the place. Counted per user, like the BM25 statistics themselves: another
        user's facts must not decide which of this user's terms count. The floor keeps small users
        exact: there, matching a half-common word is still a signal worth a text rank."""
        tokens = {t: fts_tokens(t) for t in terms}
        stats = await self.user_text_stats(user_id, [x for parts in tokens.values() for x in parts])
        return _informative(stats, terms, tokens)
