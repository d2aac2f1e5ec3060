"""The compiled template matcher (kitlib/formats/logs/_match.c) gives the Arrow path's template ids.

The Arrow path (``matching._assign_arrow``: RE2 through Arrow's kernels) is the reference: records of
every sample bundle and of a generated broker log are matched both ways, in blocks and with the
memo of shapes carried from block to block as an ingest does, and must get the same template for
every record. The compiled search for a template's literal pieces must answer what RE2 answers for
the template's pattern, on texts built to sit at its edges (prefixes, blanks, newlines inside
slots, a last piece met twice, long and non-ASCII texts), and its two hashes must tell texts apart
exactly as the Arrow path's shapes and digit-masked texts do."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kitlib
from kitlib.formats.logs import matching

C = pytest.importorskip("kitlib.formats.logs._match", reason="the compiled matcher is not built")
ROOT = Path(__file__).resolve().parents[1]
BLOCK = 4000  # records per block: several blocks per bundle, so shapes are remembered across blocks


def test_the_matcher_is_built_by_the_install_and_used():
    assert matching._C is not None and matching._compiled()


@pytest.fixture(autouse=True)
def _own_memo(monkeypatch):
    """Each test starts from an empty memo of shapes and leaves the process's memo as it was
    (the loads below would fill it), and needs the catalogue loaded into the matcher."""
    monkeypatch.setattr(matching, "_MEMO", {})
    if not matching._compiled():
        pytest.skip("the compiled matcher is switched off (KITLIB_TEMPLATE_C=0)")


def _both_paths(logger: pa.Array, message: pa.Array, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    """Each path over the same records in blocks of BLOCK, each starting with an empty memo."""
    got = []
    for path in (matching._assign_compiled, matching._assign_arrow):
        monkeypatch.setattr(matching, "_MEMO", {})
        got.append(
            np.concatenate(
                [path(logger.slice(i, BLOCK), message.slice(i, BLOCK)) for i in range(0, len(message), BLOCK)]
            )
        )
    return got[0], got[1]


def _columns(ev) -> tuple[pa.Array, pa.Array]:
    logger = pa.array(ev["logger"].astype(str).where(ev["logger"].notna(), None)).dictionary_encode()
    message = pa.array(ev["message"].astype(object).where(ev["message"].notna(), None), pa.large_string())
    return logger, message


@pytest.mark.slow
def test_every_sample_bundle_gets_the_same_template_ids_both_ways(monkeypatch):
    total = matched = 0
    for bundle in sorted(p for p in (ROOT / "sample_data").iterdir() if p.is_dir()):
        ev = kitlib.load_bundle(bundle).table("events")
        logger, message = _columns(ev)
        fast, reference = _both_paths(logger, message, monkeypatch)
        assert np.array_equal(fast, reference), (bundle.name, np.flatnonzero(fast != reference)[:5])
        total += len(fast)
        matched += int((fast >= 0).sum())
    assert total > 20_000 and matched > 0.8 * total


@pytest.mark.slow
def test_a_generated_broker_log_gets_the_same_template_ids_both_ways(monkeypatch, tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from genlog import generate
    finally:
        sys.path.remove(str(ROOT / "bench"))
    buf = io.BytesIO()
    generate(3 * 1024 * 1024, buf, seed=11)
    (tmp_path / "b" / "broker-1").mkdir(parents=True)
    (tmp_path / "b" / "broker-1" / "server.log").write_bytes(buf.getvalue())
    ev = kitlib.load_bundle(tmp_path / "b").table("events")
    logger, message = _columns(ev)
    fast, reference = _both_paths(logger, message, monkeypatch)
    assert len(fast) > 10_000 and (fast >= 0).mean() > 0.9
    assert np.array_equal(fast, reference), np.flatnonzero(fast != reference)[:5]


def _regex_says(texts: list[str], templates: list[int]) -> np.ndarray:
    p = matching.patterns()
    arr = pa.array(texts, pa.large_string())
    return np.array(
        [
            bool(pc.match_substring_regex(arr.slice(i, 1), matching.template_regex(p.templates[t]))[0].as_py())
            for i, t in enumerate(templates)
        ]
    )


def _compiled_says(texts: list[str], templates: list[int], hashed: bool = False) -> np.ndarray:
    arr = pa.array(texts, pa.large_string())
    off = np.frombuffer(arr.buffers()[1], np.int64)[: len(arr) + 1]
    rows = np.arange(len(arr), dtype=np.int64)
    extra = (C.keys(off, arr.buffers()[2], matching.SHAPE_CHARS)[1],) if hashed else ()
    return np.frombuffer(C.verify(off, arr.buffers()[2], rows, np.array(templates, np.int64), *extra), np.bool_)


def _template(text: str) -> int:
    return matching.patterns().templates.index(text)


def _edge_texts() -> tuple[list[str], list[int]]:
    """Texts around a few real templates of the catalogue: with and without a logIdent prefix, the
    prefix on a later line, blanks of every kind between words, slots spanning lines, the record's
    end followed by blanks and a trace, text after the last piece, the last piece met twice,
    non-ASCII slots, and a record longer than the characters matched."""
    p = matching.patterns()
    shrink = next(i for i, t in enumerate(p.templates) if t.startswith("Shrinking ISR from {} to {}"))
    plain = next(i for i, t in enumerate(p.templates) if "{}" not in t and len(t) > 20 and t[-1] == ".")
    two = next(i for i, t in enumerate(p.templates) if t.count("{}") == 2 and not t.endswith("{}"))
    out: list[tuple[str, int]] = []
    for ti in (shrink, plain, two):
        t = p.templates[ti]
        for fill in ("1,2", "", "x y", "é ü 日本", "a\nb", "]: ", "{}"):
            body = t.replace("{}", fill)
            for text in (
                body,
                "[Partition t-0 broker=1] " + body,
                "[A] b: c, " + body,
                "x> " + body,
                "junk" + body,
                "[A]\n] " + body,
                body + "  \n\tat java.lang.Thread.run",
                body + " trailing words",
                body + "\r\n",
                body.replace(" ", "\t", 1),
                body.replace(" ", "  \n ", 1),
                body.replace(" ", "", 1),
                body + body,
                body + "\n" + body,
                body + " " * 5000,
                "é" * 5000 + body,
                body + "é" * 5000,
            ):
                out.append((text, ti))
                out.append((text, (ti + 1) % len(p.templates)))
    return [t for t, _ in out], [i for _, i in out]


def test_the_compiled_search_answers_what_re2_answers():
    texts, tmpl = _edge_texts()
    want = _regex_says(texts, tmpl)
    assert want.any() and not want.all()
    assert np.array_equal(_compiled_says(texts, tmpl), want)
    assert np.array_equal(_compiled_says(texts, tmpl, hashed=True), want)


@pytest.mark.slow
def test_the_compiled_search_answers_what_re2_answers_for_every_template():
    """Every template of the catalogue against a text written from it (slots filled with words,
    numbers and brackets) and against the next template's text: the two searches agree."""
    p = matching.patterns()
    rng = np.random.default_rng(3)
    fills = ["0", "orders-3", "[1, 2]", "a b", "x\ny", "(reason: z)", ""]
    texts, tmpl = [], []
    for i, t in enumerate(p.templates):
        parts = t.split("{}")
        text = parts[0] + "".join(fills[rng.integers(len(fills))] + q for q in parts[1:])
        for j in (i, (i + 1) % len(p.templates)):
            texts += [text, "[Ctx id=1] " + text]
            tmpl += [j, j]
    want = _regex_says(texts, tmpl)
    assert want.sum() > 0.9 * len(p.templates)
    assert np.array_equal(_compiled_says(texts, tmpl), want)


def test_the_hashes_tell_texts_apart_as_the_arrow_path_does():
    texts = [
        "[GroupCoordinator 1]: Stabilized group g-1 generation 12",
        "[GroupCoordinator 2]: Stabilized group g-7 generation 3",  # same shape, same masked text? no: 12 vs 3
        "[GroupCoordinator 2]: Stabilized group g-7 generation 30",
        "[GroupCoordinator 1]: Stabilized group g-1 generation 12 é",
        "ab1c" + "x" * 200,
        "abc1" + "x" * 200,  # the same shape (digits dropped), another masked text
        "é" * 95 + "z1" + "tail",
        "é" * 95 + "z2" + "other tail",  # past the 96 characters of a shape
        "1" * 4000 + "é" * 200 + "end",
        "2" * 4000 + "é" * 200 + "another end",  # past the 4,096 characters matched
        "",
    ]
    arr = pa.array(texts, pa.large_string())
    off = np.frombuffer(arr.buffers()[1], np.int64)[: len(arr) + 1]
    shape, text = (np.frombuffer(b, np.uint64) for b in C.keys(off, arr.buffers()[2], matching.SHAPE_CHARS))
    want_shape = matching._without_digits(pc.utf8_slice_codeunits(arr, 0, matching.SHAPE_CHARS)).to_pylist()
    want_text = matching._digits_as_zero(matching._head(arr)).to_pylist()
    for i in range(len(texts)):
        for j in range(len(texts)):
            assert (shape[i] == shape[j]) == (want_shape[i] == want_shape[j]), (i, j)
            assert (text[i] == text[j]) == (want_text[i] == want_text[j]), (i, j)
    assert shape[4] == shape[5] and text[4] != text[5] and shape[6] == shape[7] and text[8] == text[9]


def test_group_gives_first_rows_and_groups_in_order_of_appearance():
    keys = np.array([5, 3, 5, 9, 3, 3, 2**63 + 1, 5], np.uint64)
    first, inv = (np.frombuffer(b, np.int64) for b in C.group(keys))
    assert first.tolist() == [0, 1, 3, 6] and inv.tolist() == [0, 1, 0, 2, 1, 1, 3, 0]
    first, inv = (np.frombuffer(b, np.int64) for b in C.group(np.zeros(0, np.uint64)))
    assert len(first) == 0 and len(inv) == 0


def test_null_messages_and_loggers_keep_no_id_both_ways(monkeypatch):
    logger = pa.array(["kafka.cluster.Partition", None, "kafka.cluster.Partition", ""]).dictionary_encode()
    message = pa.array(
        [None, "[Partition t-0 broker=1] Shrinking ISR from 1,2 to 1", "Shrinking ISR from 1,2 to 1", None],
        pa.large_string(),
    )
    fast, reference = _both_paths(logger, message, monkeypatch)
    assert fast.tolist() == reference.tolist()
    assert fast[0] == -1 and fast[3] == -1 and fast[2] >= 0


def test_offsets_that_do_not_bound_each_text_are_refused():
    """Each text is read from its offset up to the next one, so every offset must lie inside the
    data and none below the one before it: a middle offset past the end (first and last fine)
    or a decreasing pair is refused before any text is read."""
    data = b"[2024-01-01] INFO Shutting down" * 2
    rows, tmpl = np.array([0, 1], np.int64), np.array([0, 0], np.int64)
    flags = (np.array([0, 0], np.int64), np.array([1, 1], np.uint8))
    for bad in ([0, 10_000, 20, len(data)], [0, 40, 20, len(data)]):
        off = np.array(bad, np.int64)
        with pytest.raises(ValueError, match="offsets"):
            C.keys(off, data, matching.SHAPE_CHARS)
        with pytest.raises(ValueError, match="offsets"):
            C.verify(off, data, rows, tmpl)
        with pytest.raises(ValueError, match="offsets"):
            C.assign(off, data, rows, *flags)
    good = np.array([0, 20, 40, len(data)], np.int64)
    assert len(np.frombuffer(C.keys(good, data, matching.SHAPE_CHARS)[0], np.uint64)) == 3


def test_a_catalogue_whose_key_word_lists_more_than_every_template_is_refused(tmp_path):
    """A key word's templates fill the candidate buffer of a record (room for every template
    twice): a key word listing more entries than there are templates is a malformed catalogue,
    refused by load() with nothing kept, and a good one loads after it (in a fresh process: the
    catalogue is loaded once per process)."""
    script = tmp_path / "load.py"
    script.write_text(
        "import numpy as np\n"
        "from kitlib.formats.logs import _match as C\n"
        "i64 = lambda xs: np.array(xs, np.int64)\n"
        "pieces = [[b'Shutting\\0', b''], [b'Started\\0', b'']]\n"
        "try:\n"
        "    C.load(pieces, [b'Shutting'], i64([0] * 9), i64([0, 9]), i64([]), 2)\n"
        "except ValueError as e:\n"
        "    print('refused', e)\n"
        "assert C.load(pieces, [b'Shutting', b'Started'], i64([0, 1]), i64([0, 1, 2]), i64([]), 2)\n"
        "text = b'Shutting Shutting Shutting down'\n"
        "print(np.frombuffer(C.assign(i64([0, len(text)]), text, i64([0]), i64([-1]), np.ones(1, np.uint8)),"
        " np.int64).tolist())\n"
    )
    import subprocess

    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["refused a malformed catalogue", "[0]"]


def _recurring_records(n: int, seed: int = 7) -> tuple[pa.Array, pa.Array]:
    """Records built from the catalogue's templates, each text recurring with other numbers in its
    slots (of the same length, or not), some under a logger that does not log it or no Kafka
    logger, some with a first line that goes on past the template or a second line, and null
    messages: the cases the memo of texts must answer as the steps without it do."""
    rng = np.random.default_rng(seed)
    p = matching.patterns()
    nt = len(p.templates)
    owner = {int(x) % nt: name for name, i in p.loggers.items() for x in p.pairs[p.pairs // nt == i][:1]}
    with_digits = np.flatnonzero(matching._with_digits()[:-1])
    picks = np.r_[rng.choice(nt, 150, replace=False), with_digits[:30]]
    words = ["orders-{}", "g-{}", "{},{}", "broker-{}", "[t,{}]", "x y", "{}"]
    pool = []
    for t in picks.tolist():
        if t not in owner:
            continue
        parts = p.templates[t].split("{}")
        slots = [str(rng.choice(words)) for _ in parts[1:]]
        for name, tail in ((owner[t], ""), ("kafka.server.ReplicaManager", ""), ("com.example.App", ""),
                           (owner[t], " and more on the line"), (owner[t], "\n\tat some.Frame(Frame.java:12)")):  # fmt: skip
            pool.append((name, parts, slots, tail))
    loggers, messages = [], []
    for k in rng.integers(0, len(pool), n).tolist():
        name, parts, slots, tail = pool[k]
        text = parts[0]
        for part, slot in zip(parts[1:], slots):
            text += slot.replace("{}", str(int(rng.integers(0, 10 if rng.random() < 0.6 else 10**6)))) + part
        messages.append(None if rng.random() < 0.01 else text + tail)
        loggers.append(name)
    return pa.array(loggers).dictionary_encode(), pa.array(messages, pa.large_string())


@pytest.mark.slow
def test_texts_remembered_across_blocks_get_the_arrow_paths_ids(monkeypatch):
    """The compiled path looks texts met in earlier blocks up in its memo of texts: over blocks
    that repeat texts (and again with both memos warm) it gives the Arrow path's ids, and most
    records of the later blocks are answered from the memo."""
    logger, message = _recurring_records(8000)
    got = {}
    for path in (matching._assign_compiled, matching._assign_arrow):
        monkeypatch.setattr(matching, "_MEMO", {})
        got[path] = [np.concatenate([path(logger.slice(i, 1000), message.slice(i, 1000)) for i in range(0, 8000, 1000)])
                     for _ in range(2)]  # fmt: skip
    for fast, reference in zip(got[matching._assign_compiled], got[matching._assign_arrow]):
        assert np.array_equal(fast, reference), np.flatnonzero(fast != reference)[:5]
        assert (fast >= 0).sum() > 0.3 * len(fast) and (fast < 0).sum() > 0.1 * len(fast)
    off = np.frombuffer(message.buffers()[1], np.int64)[: len(message) + 1]
    names = np.array([matching._NAMES[x] for x in logger.to_pylist()], np.uint64)
    seen = np.frombuffer(C.lookup(off, message.buffers()[2], matching.SHAPE_CHARS, names, np.ascontiguousarray(message.is_valid(), np.uint8))[2], np.int64)  # fmt: skip
    assert (seen >= -1).mean() > 0.3
    assert np.array_equal(seen[seen >= -1], got[matching._assign_compiled][1][seen >= -1])
    assert (seen[~np.asarray(message.is_valid())] == -2).all()  # a null text is never remembered


def test_the_memo_of_texts_is_emptied_with_the_memo_of_shapes(monkeypatch):
    """A memo of shapes replaced or emptied (its limit, or a caller) empties the memo of texts,
    whose answers rest on it."""
    logger, message = _recurring_records(2000)
    matching._assign_compiled(logger, message)
    off = np.frombuffer(message.buffers()[1], np.int64)[: len(message) + 1]
    names = np.array([matching._NAMES[x] for x in logger.to_pylist()], np.uint64)

    def remembered() -> int:
        raw = C.lookup(off, message.buffers()[2], matching.SHAPE_CHARS, names, None)[2]
        return int((np.frombuffer(raw, np.int64) >= -1).sum())

    assert remembered() > 500
    matching._MEMO.clear()
    matching._assign_compiled(logger.slice(0, 0), message.slice(0, 0))
    assert remembered() == 0
    matching._assign_compiled(logger, message)
    monkeypatch.setattr(matching, "_MEMO", {})
    matching._assign_compiled(logger.slice(0, 0), message.slice(0, 0))
    assert remembered() == 0


def test_the_memo_of_texts_refuses_rows_and_templates_out_of_range():
    h = np.arange(3, dtype=np.uint64)
    tmpl = np.array([0, -1, 1], np.int64)
    with pytest.raises(IndexError):
        C.remember(np.array([3], np.int64), h, h, h, tmpl)
    with pytest.raises(ValueError, match="template"):
        C.remember(np.array([0], np.int64), h, h, h, np.array([10**9, 0, 0], np.int64))
    with pytest.raises(ValueError):
        C.remember(np.array([0], np.int64), h, h[:2], h, tmpl)
    data = b"abcdef"
    off = np.array([0, 3, 6], np.int64)
    with pytest.raises(ValueError):
        C.lookup(off, data, matching.SHAPE_CHARS, np.zeros(3, np.uint64), None)
    with pytest.raises(ValueError):
        C.lookup(off, data, matching.SHAPE_CHARS, np.zeros(2, np.uint64), np.ones(1, np.uint8))
    C.forget()


def test_the_first_bytes_leave_out_only_texts_without_a_long_prefix():
    # _may_have_long_prefix reads each text's first bytes: every text _long_prefix finds a long
    # prefix in must be kept, at every place a "] " may sit around the cut, ASCII or not
    texts = ["", "[", "]", "] x", "x] y", "[a] b", "plain text, no prefix at all"]
    for at in range(40, 60):
        for lead in ("[", "[é", "[ééé"):
            body = lead + "x" * max(at - len(lead.encode()), 0)
            texts += [body + "] rest of it", body + "]", body + "]x] y", body + "] " + "y" * 80, "x" + body[1:] + "] z"]
    texts.append("[" + "é" * 60 + "] after")
    texts.append("[" + "a" * 200)
    arr = pa.array(texts, pa.large_string()).slice(1)  # a slice: its offsets do not start at 0
    off = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    rows = np.arange(len(arr))
    may = matching._may_have_long_prefix(data, off, rows)
    found = matching._long_prefix(arr)
    assert found.any() and not may.all()  # both answers occur
    assert not (found & ~may).any()
    opens = np.array([t.startswith("[") for t in texts[1:]])
    assert not (may & ~opens).any()


def test_records_behind_a_long_prefix_are_retried_as_the_arrow_path_retries_them(monkeypatch):
    """A shape left without a template (its first record does not end as any template wants) is
    retried alone for its other records only behind a bracketed prefix whose first "] " leaves less
    than half of the shape: the one compiled call a block draws that line where Arrow does, byte
    for byte around it, with non-ASCII characters in the prefix."""
    loggers, messages, cut = [], [], []
    for at in range(38, 62):
        for lead in ("[", "[é", "[ééé"):
            body = lead + "x" * max(at - len(lead.encode()), 0)
            head = body + "] [Fetcher " + "y" * 100 + "] "  # the shape ends well before the sentence
            for sentence in ("Shutting down; zz qq", "Shutting down", "Shutting down"):
                loggers.append("kafka.server.ReplicaFetcherThread")
                messages.append(head + sentence)
            cut.append(len(body.encode()))
    logger = pa.array(loggers).dictionary_encode()
    message = pa.array(messages, pa.large_string())
    for block in (len(messages), 7):
        monkeypatch.setattr(matching, "_MEMO", {})
        fast = np.concatenate([matching._assign_compiled(logger.slice(i, block), message.slice(i, block))
                               for i in range(0, len(messages), block)])  # fmt: skip
        monkeypatch.setattr(matching, "_MEMO", {})
        reference = np.concatenate([matching._assign_arrow(logger.slice(i, block), message.slice(i, block))
                                    for i in range(0, len(messages), block)])  # fmt: skip
        assert np.array_equal(fast, reference), np.flatnonzero(fast != reference)[:5]
    second = fast.reshape(-1, 3)[:, 1]
    assert (second >= 0).any() and (second < 0).any()  # retried behind a long prefix, not behind a short one
    assert (np.array(cut)[second >= 0] >= matching.SHAPE_CHARS // 2 - 1).all()


@pytest.mark.slow
def test_a_memo_of_shapes_emptied_often_gives_the_arrow_paths_ids(monkeypatch):
    """The memo of shapes (in C on the compiled path) is emptied once it holds more than MEMO_SIZE
    shapes, as the Arrow path's dict is: with a small limit, emptied every few blocks, the ids of
    a generated log stay the Arrow path's."""
    logger, message = _recurring_records(3000)
    monkeypatch.setattr(matching, "MEMO_SIZE", 40)
    got = []
    for path in (matching._assign_compiled, matching._assign_arrow):
        monkeypatch.setattr(matching, "_MEMO", {})
        got.append(np.concatenate([path(logger.slice(i, 250), message.slice(i, 250)) for i in range(0, 3000, 250)]))
    assert np.array_equal(got[0], got[1]), np.flatnonzero(got[0] != got[1])[:5]
    assert 0 < len(matching._MEMO) < 80  # the Arrow path's memo was emptied on the way
    assert (got[0] >= 0).sum() > 0.3 * len(got[0])


def test_a_block_call_refuses_codes_and_tables_that_do_not_fit():
    data = b"abcdef"
    off = np.array([0, 3, 6], np.int64)
    glog, kafka, names = np.array([-1, -1], np.int64), np.zeros(2, np.uint8), np.zeros(2, np.uint64)
    args = (off, data, matching.SHAPE_CHARS)
    with pytest.raises(IndexError):
        C.block(*args, np.array([0, 2], np.int64), glog, kafka, names, None, 10)
    with pytest.raises(ValueError):
        C.block(*args, np.array([0], np.int64), glog, kafka, names, None, 10)
    with pytest.raises(ValueError):
        C.block(*args, np.array([0, 1], np.int64), glog, kafka[:1], names, None, 10)
    with pytest.raises(ValueError):
        C.block(*args, np.array([0, 1], np.int64), glog, kafka, names, np.ones(3, np.uint8), 10)
    got = np.frombuffer(C.block(*args, np.array([0, 1], np.int64), glog, kafka, names, None, 10), np.int64)
    assert got.tolist() == [-1, -1]  # neither logger has templates nor is a Kafka logger
    C.forget()


@pytest.mark.slow
def test_texts_repeated_within_a_block_get_the_arrow_paths_ids(monkeypatch):
    """The compiled path hashes every text but looks up the memo of texts, and makes a shape, once
    per distinct text of a block (its table of distinct texts grown past its first 4,096 slots on
    the way): blocks whose texts recur many times over, under their own logger, another Kafka
    logger, no Kafka logger or a null one, and between null messages, get the Arrow path's ids,
    with both memos empty and warm."""
    base_logger, base_message = _recurring_records(3000, seed=11)
    rng = np.random.default_rng(3)
    order = rng.integers(0, 3000, 12000)  # each record about four times over
    other = [None, "kafka.server.ReplicaFetcherThread", "kafka.log.UnifiedLog", "com.example.App", "com.example.Job"]
    names = [x if k >= len(other) else other[k]
             for x, k in zip(base_logger.take(pa.array(order)).to_pylist(), rng.integers(0, 6, 12000).tolist())]  # fmt: skip
    texts = base_message.take(pa.array(order)).to_pylist()
    logger, message = pa.array(names).dictionary_encode(), pa.array(texts, pa.large_string())
    first_block = {(n, t and t.encode().translate(matching._ZERO)) for n, t in zip(names[:6000], texts[:6000])}
    assert 2048 < len(first_block) < 5000  # more than half the first table's slots, and repeats
    got = {}
    for path in (matching._assign_compiled, matching._assign_arrow):
        monkeypatch.setattr(matching, "_MEMO", {})
        got[path] = [np.concatenate([path(logger.slice(i, 6000), message.slice(i, 6000)) for i in (0, 6000)])
                     for _ in range(2)]  # fmt: skip
    for fast, reference in zip(got[matching._assign_compiled], got[matching._assign_arrow]):
        assert np.array_equal(fast, reference), np.flatnonzero(fast != reference)[:5]
        assert (fast >= 0).sum() > 0.3 * len(fast) and (fast < 0).sum() > 0.05 * len(fast)
