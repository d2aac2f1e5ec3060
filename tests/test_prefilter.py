"""The literal prefilter of the extractors' message patterns (kitlib.extract.prefilter): the
literals derived from a pattern are held by every text it matches, the compiled search finds
exactly the rows holding one (with case folding, also every row with a byte outside ASCII), and
a selection with the prefilter picks the same records as one with RE2 alone."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kitlib import extract, registry
from kitlib.extract import prefilter
from kitlib.extract.prefilter import Literals, candidates, necessary_literals

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"

try:
    from kitlib.formats.logs import _prefilter  # noqa: F401

    METHODS = [0, 1]  # Wu-Manber, SIMD (where the processor has SSSE3; else Wu-Manber again)
except ImportError:
    METHODS = [-1]


def _re2(texts: pa.Array, pattern: str) -> np.ndarray:
    return np.asarray(pc.match_substring_regex(texts, pattern).to_numpy(zero_copy_only=False), bool)


def _holds(texts: list, lits: Literals) -> np.ndarray:
    """The candidates, by Python: a text holding a literal (folded), or with fold a non-ASCII one."""
    out = []
    for t in texts:
        if t is None:
            out.append(False)
            continue
        low = t.encode().decode("latin-1")
        if lits.fold:
            low = "".join(c.lower() if "A" <= c <= "Z" else c for c in low)
        out.append(any(k.encode().decode("latin-1") in low for k in lits.texts) or (lits.fold and not t.isascii()))
    return np.array(out, bool)


def test_literals_of_simple_patterns():
    assert necessary_literals("abc") == Literals(("abc",), False)
    assert necessary_literals(r"Shrinking ISR from (\d+)") == Literals(("Shrinking ISR from ",), False)
    assert necessary_literals(r"foo\d+barbaz|qu\w+") is None  # qu: too short
    assert necessary_literals(r"(?i)Rebalanc|HEARTBEAT") == Literals(("heartbeat", "rebalanc"), True)
    assert necessary_literals(r"x(?i:Fenced)") == Literals(("xfenced",), True)  # scoped: folded throughout
    assert necessary_literals(r"[Cc]urrent leader") == Literals(("Current leader", "current leader"), False)
    assert necessary_literals(r"(?i)MAX_?POLL") == Literals(("max_poll", "maxpoll"), True)
    assert necessary_literals(r"\bjoined;") == Literals(("joined;",), False)
    assert necessary_literals(r"(?m)^starting$") == Literals(("starting",), False)
    assert necessary_literals(r"a.*b") is None
    assert necessary_literals(r"(?:abcd)?efg") == Literals(("efg",), False)
    assert necessary_literals(r"(?:abcd)+") == Literals(("abcd",), False)
    assert necessary_literals(r"(?:abcd)*xy") is None
    assert necessary_literals(r"abc|") is None  # the empty branch matches everywhere
    assert necessary_literals("") is None


def test_no_literals_where_python_reads_the_pattern_otherwise_than_re2():
    assert necessary_literals(r"[[:alpha:]]abcdef") is None
    assert necessary_literals(r"ab{,3}cdef") is None
    assert necessary_literals(r"(?x) a b c d") is None
    assert necessary_literals(r"abc(") is None  # not a pattern
    assert necessary_literals(r"(?=abcd)abcdef") is None  # Python's, not RE2's: RE2 says so when it runs
    assert necessary_literals(r"(abcd)\1") is None
    assert necessary_literals("(?i)k\u212aelvin") == Literals(("elvin",), True)  # (non-ASCII: no literal)


def test_every_contains_pattern_of_the_kit_has_literals_or_none():
    registry.load()
    for name, ex in extract.EXTRACTORS.items():
        if ex.contains:
            lits = necessary_literals(ex.contains)
            assert lits is None or all(len(t.encode()) >= prefilter.MIN_LENGTH for t in lits.texts), name


TRICKY = [
    "",
    "abc",
    "Rebalancing group g1",
    "REBALANC",
    "rEbAlAnC",
    "first line\nthen HeartBeat here",
    "heartbea",
    "eartbeat",
    "\u212a",  # Kelvin sign: RE2 (?i) matches k with it
    "ok \u017fomething",  # long s
    "\u212aelvins",
    "caf\u00e9 rebalance",
    "end with heartbeat",
    "heartbeat at start",
    "x" * 40 + "MAX_POLL" + "y" * 40,
    "maxpoll",
    "max poll",
    "Partition [t,0] on broker 1: Shrinking ISR from 1,2 to 1.",
    "[Partition t-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader",
    "[Partition t-0 broker=1] ISR updated to 1,2 and version updated",
    "partition [t,0] on broker 1: shrinking isr from 1 to 1.",
    "no literal at all",
    "\n\n\n",
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_candidates_are_the_rows_holding_a_literal(method, kind):
    registry.load()
    patterns = [ex.contains for ex in extract.EXTRACTORS.values() if ex.contains]
    patterns += [r"(?i)rebalanc|heartbeat|MAX_?POLL", r"abc|xyz", r"(?i)kelvins|something"]
    rng = random.Random(7)
    words = [w for t in TRICKY for w in t.split()] + ["\u212a", "\u017f", "é", "\n"]
    texts = TRICKY + [None] + [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(400)]
    for p in patterns:
        lits = necessary_literals(p)
        if lits is None:
            continue
        extra = [rng.choice(lits.texts) + rng.choice(["", " tail", "\nnext"]) for _ in range(50)]
        extra += ["".join(c.upper() if rng.random() < 0.5 else c for c in t) for t in extra]
        rows = texts + extra
        arr = pa.array(rows, kind)
        got = candidates(arr, lits, method)
        assert (got == _holds(rows, lits)).all(), p
        re2 = _re2(arr, p)
        assert not (re2 & ~got).any(), (p, [r for r, a, b in zip(rows, re2, got, strict=True) if a and not b])


@pytest.mark.parametrize("method", METHODS)
def test_literals_across_row_boundaries_nulls_empties_and_slices(method):
    lits = Literals(("cde", "heartbeat"), False)
    rows = ["abc", "def", "", None, "xxcdexx", "heart", "beat", "cd", "e", "heartbeat"]
    arr = pa.array(rows, pa.large_string())
    expect = _holds(rows, lits)
    assert expect.tolist() == [False, False, False, False, True, False, False, False, False, True]
    assert (candidates(arr, lits, method) == expect).all()
    for start in range(len(rows)):
        for stop in range(start, len(rows) + 1):
            part = arr.slice(start, stop - start)
            assert (candidates(part, lits, method) == expect[start:stop]).all(), (start, stop)
    chunked = pa.chunked_array([arr.slice(0, 4), arr.slice(4)])
    assert (candidates(chunked, lits, method) == expect).all()
    dictionary = pa.array(rows).dictionary_encode()
    assert (candidates(dictionary, lits, method) == expect).all()
    assert candidates(pa.array([], pa.string()), lits, method).tolist() == []
    assert candidates(pa.array(["", ""], pa.string()), lits, method).tolist() == [False, False]


@pytest.mark.parametrize("method", METHODS)
def test_long_rows_and_the_end_of_the_data(method):
    """Rows longer than the SIMD step, literals at every offset, the last bytes of the buffer."""
    lits = Literals(("needle", "Pin"), False)
    rows = []
    for n in range(0, 70):
        for lit in ("needle", "Pin", "needl", "pin"):
            rows.append("." * n + lit)
            rows.append(lit + "." * n)
    arr = pa.array(rows)
    assert (candidates(arr, lits, method) == _holds(rows, lits)).all()
    for k in range(1, 40):  # the last rows end where the data buffer ends
        tail = arr.slice(len(rows) - k)
        assert (candidates(tail, lits, method) == _holds(rows[-k:], lits)).all()


def test_without_the_compiled_part_the_same_rows(monkeypatch):
    lits = necessary_literals(r"(?i)rebalanc|heartbeat|MAX_?POLL")
    arr = pa.array(TRICKY + [None])
    compiled = candidates(arr, lits)
    monkeypatch.setattr(prefilter, "_compiled", lambda literals: None)
    assert (candidates(arr, lits) == compiled).all()


@pytest.mark.slow
@pytest.mark.parametrize("bundle", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_a_selection_with_the_prefilter_is_the_selection_of_re2_alone(bundle, monkeypatch):
    import kitlib
    from kitlib import tables

    registry.load()
    block = tables.to_arrow("events", kitlib.load_bundle(SAMPLES / bundle, cache=False).events)
    assert extract.PREFILTER
    with_prefilter = extract.select(block)
    monkeypatch.setattr(extract, "PREFILTER", False)
    alone = extract.select(block)
    assert with_prefilter.keys() == alone.keys()
    for g, sel in alone.items():
        assert with_prefilter[g].equals(sel), g
    for name, ex in extract.EXTRACTORS.items():  # and every pattern on every message, whatever its logger
        lits = necessary_literals(ex.contains) if ex.contains else None
        if lits is not None:
            message = block.column("message")
            assert not (_re2(message, ex.contains) & ~candidates(message, lits)).any(), name


@pytest.mark.parametrize("method", METHODS)
def test_random_literal_sets_of_every_size(method):
    """Sets of 1 to 40 literals (one bank of buckets or two), folded or not, on random texts."""
    rng = random.Random(11)
    alphabet = "abcXYZ [=]-.\u00e9"
    for size in range(1, 41):
        for fold in (False, True):
            lits = {"".join(rng.choice(alphabet) for _ in range(rng.randint(3, 7))) for _ in range(size)}
            texts = sorted(lits) if not fold else sorted(t.lower() for t in lits)
            texts = [t for t in texts if t.isascii() or not fold]
            if not texts:
                continue
            found = Literals(tuple(texts), fold)
            rows = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(150)]
            rows += [rng.choice(texts).upper() + "x" for _ in range(10)] + [None, ""]
            got = candidates(pa.array(rows), found, method)
            assert (got == _holds(rows, found)).all(), (size, fold)


@pytest.mark.slow
@pytest.mark.parametrize("bundle", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_derived_tables_with_the_prefilter_in_the_builders_are_those_of_re2_alone(bundle, monkeypatch):
    """The builders' rule passes (``extract.hits``) run RE2 only on the texts holding one of a
    rule's literals: every derived table of every sample bundle is the same, row for row, as
    with RE2 on every text."""
    import kitlib
    from kitlib import tables

    names = sorted(n for n in tables.SCHEMAS if n not in ("events", "unparsed", "files"))
    with_prefilter = kitlib.load_bundle(SAMPLES / bundle, cache=False)
    built = {name: getattr(with_prefilter, name) for name in names}
    monkeypatch.setattr(extract, "PREFILTER", False)
    alone = kitlib.load_bundle(SAMPLES / bundle, cache=False)
    for name in names:
        assert built[name].equals(getattr(alone, name)), name


def test_a_rule_pass_runs_re2_on_the_texts_holding_its_literals_only(monkeypatch):
    """On a group's lines, a rule's pass hands RE2 only the texts holding one of its literals
    and answers the same as RE2 on every text."""
    texts = pa.array(
        [
            "[GroupCoordinator 1]: Preparing to rebalance group orders in state PreparingRebalance with old "
            "generation 4 (__consumer_offsets-12) (reason: Adding new member consumer-1-abc with group "
            "instance id None)",
            "[GroupCoordinator 1]: Stabilized group orders generation 5 (__consumer_offsets-12) with 3 members",
            "[GroupCoordinator 1]: Assignment received from leader consumer-1-abc for group orders for "
            "generation 5. The group has 3 members, 0 of which are static.",
        ]
        * 200
    )
    pattern = r"Stabilized group (?P<group>\S+) generation (?P<generation>\d+)"
    given = []
    real = extract._regex_hits
    monkeypatch.setattr(extract, "_regex_hits", lambda t, p: given.append(len(t)) or real(t, p))
    got = extract.hits(texts, pattern)
    assert given == [200]
    assert got.tolist() == _re2(texts, pattern).tolist() and got.sum() == 200
