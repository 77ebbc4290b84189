"""Value-keyed, per-user tombstones and the dedup rule (ACTIVE facts and PENDING candidates only).

The value key is checked with hypothesis: the forms a person would call "the same statement" (case,
whitespace, punctuation, NFC/NFD, full-width) share a key, and different word sequences never do.
"""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from engine import Memory
from engine.text import best_match, looks_alike, same_value, value_key
from tests.engine_helpers import Clock

# Letters whose case and normalisation forms round-trip (no ß, no dotless i: their case mappings
# are not one-to-one, and a key that folds them is still right, just not testable by inversion).
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789éüñçàöøåæ"
words = st.lists(st.text(alphabet=LETTERS, min_size=1, max_size=9), min_size=1, max_size=8)
separators = st.sampled_from(
    [
        " ",
        "  ",
        "\t",
        "\n",
        " \u00a0",
        ", ",
        ". ",
        "! ",
        "? ",
        " - ",
        " — ",
        "; ",
        "...",
        "/",
        " (",
        ") ",
        "'",
        '"',
        ":",
        " & ",
        "*",
    ]
)


def full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else ("\u3000" if c == " " else c) for c in text)


@given(words)
def test_key_ignores_case_and_unicode_form(ws: list[str]) -> None:
    text = " ".join(ws)
    key = value_key(text)
    assert value_key(text.upper()) == key
    assert value_key(text.title()) == key
    assert value_key(unicodedata.normalize("NFD", text)) == key
    assert value_key(unicodedata.normalize("NFC", text.upper())) == key
    assert value_key(full_width(text)) == key


@given(words, st.data())
def test_key_ignores_whitespace_and_punctuation_between_words(ws: list[str], data: st.DataObject) -> None:
    seps = [data.draw(separators) for _ in range(len(ws) + 1)]
    decorated = seps[0] + "".join(w + s for w, s in zip(ws, seps[1:], strict=True))
    assert value_key(decorated) == value_key(" ".join(ws)) == " ".join(ws)


@given(words, words)
def test_different_word_sequences_keep_different_keys(a: list[str], b: list[str]) -> None:
    if a == b:
        assert value_key(" ".join(a)) == value_key(" ".join(b))
    else:
        assert value_key(" ".join(a)) != value_key(" ".join(b))


@given(words, st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_a_near_match_never_crosses_a_different_number(ws: list[str], n: int, m: int) -> None:
    a, b = value_key(" ".join([*ws, str(n)])), value_key(" ".join([*ws, str(m)]))
    assert (best_match(a, [b]) is not None) == (n == m)
    assert same_value(" ".join([*ws, str(n)]), " ".join([*ws, str(m)])) == (n == m)
    assert not looks_alike(" ".join([*ws, str(n)]), " ".join([*ws, str(m)]))


def test_a_near_match_is_a_typo_not_another_value() -> None:
    key = value_key("Ana is allergic to peanuts")
    assert best_match(value_key("Ana is alergic to peanuts"), [key]) is not None
    assert best_match(value_key("Ana is allergic to peanutz"), [key]) is not None
    # Each of these scores above 92 on the whole-string ratio, yet states something else.
    assert best_match(value_key("Ana is allergic to walnuts"), [key]) is None
    assert best_match(value_key("Ana is not allergic to peanuts"), [key]) is None


# -- the same-value rule: the same canonical text (look-alike letters included) is the same value;
# -- one edit in a long word is a look-alike (a mark for a person), never the same value -----------

LOWER = "abcdefghijklmnopqrstuvwxyz"
# ASCII letters and Cyrillic / Greek letters drawn the same (Unicode confusables).
HOMOGLYPHS = {
    "a": "а",
    "c": "с",
    "e": "е",
    "i": "і",
    "o": "ο",
    "p": "р",
    "s": "ѕ",
    "x": "х",
    "y": "у",
    "j": "ј",
    "h": "һ",
    "d": "ԁ",
    "v": "ν",
}
long_word = st.text(alphabet=LOWER, min_size=5, max_size=12)
short_word = st.text(alphabet=LOWER, min_size=1, max_size=4)
sentence = st.lists(st.text(alphabet=LOWER, min_size=1, max_size=9), min_size=1, max_size=6)


def _key_by_the_general_rule(text: str) -> str:
    """`value_key`'s steps as written for any text, without its ASCII shortcut."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = []
    for ch in folded:
        cat = unicodedata.category(ch)
        if cat[0] in ("P", "S", "Z") or ch.isspace():
            kept.append(" ")
        elif cat[0] != "C":
            kept.append(ch)
    return unicodedata.normalize("NFKC", " ".join("".join(kept).split()))


def test_the_ascii_shortcut_keys_every_ascii_character_as_the_general_rule_does() -> None:
    for code in range(128):
        for text in (chr(code), f"ab{chr(code)}cD", f"{chr(code)} X {chr(code)}"):
            assert value_key.__wrapped__(text) == _key_by_the_general_rule(text), repr(text)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_the_ascii_shortcut_agrees_on_any_ascii_text(text: str) -> None:
    assert value_key.__wrapped__(text) == _key_by_the_general_rule(text)


def test_named_cases() -> None:
    rejected = "User is allergic to peanuts"
    assert same_value(rejected, "Usеr іs аllеrgіc tо pеаnuts")  # Cyrillic е, і, а, о
    assert same_value(rejected, "USER IS ALLERGIC TO PEANUTS!")
    assert same_value(rejected, "User is aller\u00adgic to pea\u200bnuts\ufe0f")  # invisible marks
    # one edit in a word of five or more letters: a look-alike, not the same value
    for alike in ("User is allergic to paenuts", "User is allregic to peanuts"):
        assert looks_alike(rejected, alike) and not same_value(rejected, alike)
    assert looks_alike("User lives in Lisbon", "User lives in Lisbno")
    assert looks_alike("User owns a horse", "User owns a house")  # two true values, one edit apart
    assert looks_alike("User likes Sarah", "User likes Sara")
    assert not same_value("User owns a horse", "User owns a house")
    assert not same_value(rejected, "User is allergic to walnuts")
    assert not looks_alike(rejected, "User is allergic to walnuts")  # two edits
    assert not same_value(rejected, "User is not allergic to peanuts")
    assert not looks_alike(rejected, rejected.upper())  # the same value is not a look-alike of itself
    # a different real value is never blocked
    assert not same_value("User lives in hope", "User lives in Hove")
    assert not same_value("User lives in hope", "I live in Hove now")
    assert not same_value("lives in hope", "I live in Hove now")
    assert not same_value("User has a cat", "User has a car")
    assert not same_value("User's avó is named Rita", "User's avô is named Rita")  # accents stay
    assert not same_value("User has a burn", "User has a bum")  # ASCII look-alikes (rn / m) stay apart
    assert not same_value("User is 31", "User is 32")
    # "hpoe" is one transposition, but in a four-letter word: no typo allowance there.
    assert not same_value("User lives in hope", "User lives in hpoe")
    assert not looks_alike("User lives in hope", "User lives in hpoe")
    assert not looks_alike("User lives in hope", "User lives in Hove")


@given(sentence, long_word, st.data())
def test_one_edit_in_a_word_of_five_or_more_letters_is_a_look_alike_not_the_same_value(
    ws: list[str], word: str, data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(ws)))
    pos = data.draw(st.integers(0, len(word) - 1))
    edit = data.draw(st.sampled_from(["sub", "del", "ins", "swap"]))
    letter = data.draw(st.sampled_from(LOWER))
    if edit == "sub":
        typo = word[:pos] + letter + word[pos + 1 :]
    elif edit == "del":
        typo = word[:pos] + word[pos + 1 :]
    elif edit == "ins":
        typo = word[:pos] + letter + word[pos:]
    else:
        pos = min(pos, len(word) - 2)
        typo = word[:pos] + word[pos + 1] + word[pos] + word[pos + 2 :]
    original = " ".join([*ws[:at], word, *ws[at:]])
    edited = " ".join([*ws[:at], typo, *ws[at:]])
    if value_key(edited) == value_key(original):  # a swap of two equal letters changes nothing
        assert same_value(original, edited)
    else:
        assert looks_alike(original, edited) and not same_value(original, edited)


@given(sentence, short_word, st.data())
def test_a_different_short_word_is_never_the_same_value(ws: list[str], word: str, data: st.DataObject) -> None:
    other = data.draw(st.text(alphabet=LOWER, min_size=1, max_size=4).filter(lambda w: w != word))
    at = data.draw(st.integers(0, len(ws)))
    a, b = " ".join([*ws[:at], word, *ws[at:]]), " ".join([*ws[:at], other, *ws[at:]])
    assert not same_value(a, b)
    if all(len(w) < 4 for w in ws):  # no long word around the edit: not even a look-alike
        assert not looks_alike(a, b)


@given(sentence, long_word, st.data())
def test_two_edits_or_a_word_more_is_never_the_same_value(ws: list[str], word: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(ws)))
    a, b = data.draw(st.sampled_from(LOWER)), data.draw(st.sampled_from(LOWER))
    assume_changed = word[0] != a and word[-1] != b
    twice = a + word[1:-1] + b  # two substitutions, far apart
    original = " ".join([*ws[:at], word, *ws[at:]])
    if assume_changed:
        assert not same_value(original, " ".join([*ws[:at], twice, *ws[at:]]))
        assert not looks_alike(original, " ".join([*ws[:at], twice, *ws[at:]]))
    extra = data.draw(st.text(alphabet=LOWER, min_size=1, max_size=6))
    assert not same_value(original, " ".join([*ws[:at], extra, word, *ws[at:]]))


@given(sentence, st.data())
def test_the_same_text_in_look_alike_letters_is_the_same_value(ws: list[str], data: st.DataObject) -> None:
    text = " ".join(ws)
    flips = data.draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    disguised = "".join(HOMOGLYPHS.get(ch, ch) if flip else ch for ch, flip in zip(text, flips, strict=True))
    assert same_value(text, disguised)
    assert same_value(text.upper(), disguised)


async def test_tombstone_gate_blocks_the_same_value_and_marks_a_look_alike(mem: Memory) -> None:
    for user, text in (("ana", "User lives in hope"), ("ana", "User is allergic to peanuts")):
        cid = await mem.queue_candidate(user, text)
        assert await mem.review.reject(cid, reviewer="rev", reason="idiom / wrong") is not None
    for blocked in ("Usеr іs аllеrgіc tо pеаnuts", "user lives in HOPE!", "User is allergic to pea\u200bnuts"):
        assert await mem.is_tombstoned("ana", blocked) is not None, blocked
    for free in ("User lives in Hove", "User is allergic to walnuts", "User lives in hove now"):
        assert await mem.is_tombstoned("ana", free) is None, free
    # a look-alike is not blocked: it is queued with a visible mark naming the tombstone
    assert await mem.is_tombstoned("ana", "User is allergic to peanust") is None
    cid = await mem.queue_candidate("ana", "User is allergic to peanust")
    [mark] = (await mem.review.get(cid)).marks
    assert mark.kind == "near_tombstone" and "tombstone" in mark.note


# -- tombstones through Memory --------------------------------------------------------------------


REJECTED = "Zoë is allergic to crème brûlée"


async def test_a_rejected_value_is_tombstoned_in_every_form_for_that_user_only(mem: Memory) -> None:
    assert await mem.is_tombstoned("zoe", REJECTED) is None  # nothing rejected yet
    cid = await mem.queue_candidate("zoe", REJECTED)
    stone = await mem.review.reject(cid, reviewer="rev", reason="it was her brother")
    assert stone is not None

    same_value = [
        REJECTED,
        REJECTED.upper(),
        "zoë IS allergic to Crème-Brûlée!!!",
        "  Zoë   is allergic, to crème brûlée.  ",
        unicodedata.normalize("NFD", REJECTED),
        unicodedata.normalize("NFC", REJECTED),
        full_width(REJECTED),
        "Zoë is allergic to crème\u200b brûlée\ufe0f",  # invisible marks
    ]
    assert unicodedata.normalize("NFD", REJECTED) != REJECTED  # the NFD case is really a different string
    for text in same_value:
        found = await mem.is_tombstoned("zoe", text)
        assert found is not None and found.id == stone.id, text
        assert await mem.is_tombstoned("yann", text) is None, text  # another user is never blocked

    for other_value in (
        "Zoë is alergic to crème brûlée",  # a look-alike: marked where it is queued, never blocked
        "Zoë is allergic to peanuts",
        "Zoë is not allergic to crème brûlée",
        "Zoë is allergic to crème caramel",
    ):
        assert await mem.is_tombstoned("zoe", other_value) is None, other_value


async def test_lifting_a_tombstone_unblocks_the_value(mem: Memory) -> None:
    cid = await mem.queue_candidate("zoe", REJECTED)
    stone = await mem.review.reject(cid, reviewer="rev", reason="it was her brother")
    assert stone is not None
    assert await mem.is_tombstoned("zoe", REJECTED.upper()) is not None
    await mem.lift_tombstone("zoe", stone.id, actor="curator", reason="she confirmed it herself")
    assert await mem.is_tombstoned("zoe", REJECTED.upper()) is None
    assert [e.action for e in await mem.history("zoe") if e.entity == "tombstone"] == ["create", "lift"]


async def test_reject_without_tombstone_blocks_nothing(mem: Memory) -> None:
    cid = await mem.queue_candidate("zoe", REJECTED)
    assert await mem.review.reject(cid, reviewer="rev", reason="unclear", tombstone=False) is None
    assert await mem.is_tombstoned("zoe", REJECTED) is None


# -- dedup ----------------------------------------------------------------------------------------


async def test_an_active_fact_or_pending_candidate_is_a_duplicate(mem: Memory) -> None:
    fact = await mem.add_knowledge("zoe", "Zoë lives in Lisbon", actor="support")
    cid = await mem.queue_candidate("zoe", "Zoë plays the oboe")
    assert await mem.is_duplicate("zoe", "zoë lives in lisbon!") == ("knowledge", fact.id)
    assert await mem.is_duplicate("zoe", "Zoë plays the oboe.") == ("candidate", cid)
    assert await mem.is_duplicate("yann", "Zoë lives in Lisbon") is None  # another user's fact
    assert await mem.is_duplicate("zoe", "Zoë lives in Porto") is None


async def test_a_superseded_or_retracted_fact_is_not_a_duplicate(mem: Memory, clock: Clock) -> None:
    lisbon = await mem.add_knowledge("zoe", "Zoë lives in Lisbon", actor="support")
    assert await mem.is_duplicate("zoe", "Zoë lives in Lisbon") == ("knowledge", lisbon.id)  # control

    clock.advance(days=1)
    cid = await mem.queue_candidate("zoe", "Zoë lives in Porto", kind="update", supersedes_id=lisbon.id)
    porto = await mem.review.confirm_supersession(cid, reviewer="rev")
    clock.advance(days=1)  # the move back starts after the move (a supersession never starts earlier)
    # She moves back: the superseded statement is learnable again.
    assert await mem.is_duplicate("zoe", "Zoë lives in Lisbon") is None
    back = await mem.queue_candidate("zoe", "Zoë lives in Lisbon", kind="update", supersedes_id=porto.id)
    assert await mem.is_duplicate("zoe", "Zoë lives in Lisbon") == ("candidate", back)
    await mem.review.confirm_supersession(back, reviewer="rev")
    assert await mem.is_duplicate("zoe", "Zoë lives in Porto") is None

    corrected = await mem.add_knowledge("zoe", "Zoë has a cat", actor="support")
    await mem.correct("zoe", corrected.id, "Zoë has two cats", actor="support", reason="count")
    assert await mem.is_duplicate("zoe", "Zoë has a cat") is None
    assert await mem.is_duplicate("zoe", "Zoë has two cats") is not None

    gone = await mem.add_knowledge("zoe", "Zoë works at Acme", actor="support")
    await mem.retract("zoe", gone.id, actor="support", reason="left", tombstone=False)
    assert await mem.is_duplicate("zoe", "Zoë works at Acme") is None


async def test_a_decided_candidate_is_not_a_duplicate(mem: Memory) -> None:
    cid = await mem.queue_candidate("zoe", "Zoë plays the oboe")
    await mem.review.reject(cid, reviewer="rev", reason="no", tombstone=False)
    assert await mem.is_duplicate("zoe", "Zoë plays the oboe") is None
