"""Redaction of whole columns and frames (kitlib.redact.columns): the same values as redacting each
text on its own, with fewer passes over the column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kitlib.redact import PREFILTER, redact_flagged, redact_frame, redact_text
from kitlib.redact import columns as rc

FAILED_LOGIN = (
    "[SocketServer listenerType=BROKER, nodeId=1] Failed authentication with /10.0.7.12 (channelId="
    "10.0.7.12:9092-10.0.7.12:1534211-0) (Authentication failed: Invalid username or password)"
)

# pieces that pass the pre-check, some rule's words or quick test, or neither, and the characters
# where Python's re and RE2 part ways (vertical tab, \x1c, long s, Kelvin sign, dotless i)
_PIECES = st.sampled_from(
    [
        "password",
        "PassWord",
        "token",
        "user_bob",
        "api-key",
        "client.secret",
        "ssl.key.password",
        "sasl.jaas.config",
        "Authorization: Bearer ",
        "value",
        "name=",
        "</",
        "://app:",
        "@db",
        "|",
        "=",
        ":",
        " ",
        "\t",
        "\n",
        '"',
        "'",
        "-",
        "-storepass",
        "s3cr3tX9",
        "AKIAIOSFODNN7EXAMPLE",
        "QmFzZTY0S2V5TGluZTAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtbg",
        "\v",
        "\x1c",
        "\u017f",
        "\u212a",
        "\u0131",
        "is",
        "Invalid username or password)",
        "(channelId=10.0.1.2:9092-10.0.3.4:51234-0)",
    ]
)
_TEXTS = st.lists(st.one_of(st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=10).map("".join), st.none()))


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TEXTS.filter(len))
def test_flagged_values_are_redacted_like_each_text(texts):
    arr = pa.array(texts, pa.large_string())
    want = [redact_text(t) if t is not None else None for t in texts]
    few = rc._FEW
    try:
        # a few flagged values each through the rules alone, and any number through the RE2 passes
        for rc._FEW in (few, 0):
            got = redact_flagged(arr, list(range(len(texts)))).to_pylist()
            assert got == want, rc._FEW
    finally:
        rc._FEW = few


def test_texts_no_rule_may_change_are_not_handed_to_the_rules(monkeypatch):
    handed: list = []
    real = rc.redact_texts

    def recording(arr):
        handed.extend(arr.to_pylist())
        return real(arr)

    monkeypatch.setattr(rc, "redact_texts", recording)
    secret = FAILED_LOGIN.replace("password)", "password=hunter2)")
    odd = FAILED_LOGIN + "\v"  # not plain text: Python's rules decide
    texts = [FAILED_LOGIN] * 50 + [secret, None, odd, "Invalid username or password"]
    arr = pa.array(texts, pa.large_string())
    out = rc.redact_array(arr).to_pylist()
    assert out == [redact_text(t) if t is not None else None for t in texts]
    assert out[50] == FAILED_LOGIN.replace("password)", "password=[redacted])")
    assert handed == [secret, odd]  # the failed-login lines the pre-check flags go no further
    handed.clear()
    same = pa.array([FAILED_LOGIN] * 3, pa.large_string())
    assert rc.redact_array(same) is same and handed == []


def test_a_frame_is_prechecked_once_and_redacted_like_each_text(monkeypatch):
    passes: list[int] = []
    real = pc.match_substring_regex

    def counting(values, pattern, *a, **k):
        if pattern == PREFILTER:
            passes.append(len(values))
        return real(values, pattern, *a, **k)

    monkeypatch.setattr(pc, "match_substring_regex", counting)
    df = pd.DataFrame(
        {
            "kind": pd.Series(["auth", "token=abc123x9", "auth", None], dtype="category"),
            "reason": pd.Series([FAILED_LOGIN, "password=hunter2", None, "ok"], dtype="string"),
            "raw": pd.Series(["a", "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9x", None, "b"], dtype=object),
            "mixed": pd.Series([1, "secret=s3cr3tX9", None, 2.5], dtype=object),
            "clean": pd.Series(["x", "y", "z", None], dtype="string"),
            "n": [1, 2, 3, 4],
        }
    )
    want = {
        c: [_plain(redact_text(v) if isinstance(v, str) else v) for v in df[c].astype(object).tolist()]
        for c in ("kind", "reason", "raw", "mixed", "clean")
    }
    dtypes = df.dtypes.astype(str).to_dict()
    out = redact_frame("demo", df.copy())
    # the small columns in one pass; the mixed one (no Arrow form) value by value, as before. Of
    # kind's two categories, then reason, raw and clean (14 values), RE2 reads only the four the
    # compiled pre-check leaves in (the token, the failed login, the password and the bearer)
    assert passes == [2 + 4 + 4 + 4] if rc._compiled is None else [4]
    for c, values in want.items():
        assert [_plain(v) for v in out[c].astype(object).tolist()] == values, c
    assert out["reason"].tolist()[1] == "password=[redacted]"
    assert out["kind"].cat.categories.tolist() == ["auth", "token=[redacted]"]
    assert out.dtypes.astype(str).to_dict() == dtypes


@pytest.mark.parametrize("chunks", [1, 3])
def test_a_series_from_chunks_is_redacted_like_each_text(chunks):
    texts = ["ok", "password=hunter2", None, 'user_alice="x9y8"', FAILED_LOGIN] * 6
    parts = [texts[i::chunks] for i in range(chunks)]
    s = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(p, pa.large_string()) for p in parts])))
    flat = [t for p in parts for t in p]
    out = redact_frame("demo", pd.DataFrame({"t": s}))["t"]
    assert [_plain(v) for v in out.tolist()] == [redact_text(t) if t else None for t in flat]


def test_a_chunked_column_nothing_changed_in_is_handed_back_and_a_secret_in_one_chunk_redacted():
    clean = ["ok", None, FAILED_LOGIN.replace("username or password", "name")] * 3
    arr = pa.chunked_array([pa.array(clean, pa.large_string()), pa.array(["fine"], pa.large_string())])
    assert rc.redact_array(arr) is arr
    s = pd.Series(pd.arrays.ArrowStringArray(arr))
    assert rc.redact_series(s) is s  # the frame's column is kept, not rebuilt
    mixed = pa.chunked_array([pa.array(clean, pa.large_string()), pa.array(["token=abc123"], pa.large_string())])
    out = rc.redact_array(mixed)
    assert out is not mixed and out.num_chunks == 2
    assert out.to_pylist() == clean + ["token=[redacted]"]


def _plain(v):
    """A value with every kind of missing (None, NA, NaN) as None."""
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else v


def _block(names: list[str], codes: list[int], messages: list[str]) -> pa.Table:
    return pa.table(
        {
            "logger": pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(names, pa.string())),
            "message": pa.array(messages, pa.large_string()),
            "host": pa.DictionaryArray.from_arrays(pa.array([0] * len(codes), pa.int32()), pa.array(["broker-1"])),
        }
    )


def test_blocks_with_the_same_dictionaries_are_prechecked_once_and_redacted_alike(monkeypatch):
    passes: list[int] = []
    real = pc.match_substring_regex

    def counting(values, pattern, *a, **k):
        if pattern == PREFILTER:
            passes.append(len(values))
        return real(values, pattern, *a, **k)

    monkeypatch.setattr(pc, "match_substring_regex", counting)
    monkeypatch.setattr(rc, "_SEEN", {None: False})
    names = ["kafka.log.LogSegment", "kafka.server.KafkaApis"]
    odd = [*names, "app.token=abc123x9"]
    blocks = [
        _block(names, [0, 1, 1], ["a", "b", "c"]),
        _block(names[::-1], [1, 0], ["d", "e"]),  # the same names in another order: no pass
        _block(odd, [0, 2, 1, 2], ["f", "g", "h", "i"]),  # a new logger name, flagged
        _block([odd[2], odd[0]], [0, 0], ["j", "k"]),  # two of those again
    ]
    first = [rc.redact_table("events", b, skip=("message",)) for b in blocks]
    # the joint pre-check: the first block's two dictionaries (2 + 1 names), then only the third
    # block's logger dictionary, which has a new name (3); a dictionary with a flagged name is
    # still redacted with redact_array's own pass in every block that has it (3, then 2). Without
    # the memo: 3, 3, 4, 3, 3, 2. With the compiled pre-check RE2 reads only the values it leaves
    # in: the flagged name, in each of those three passes
    assert passes == ([2 + 1, 3, 3, 2] if rc._compiled is None else [1, 1, 1])
    assert first[2].column("logger").to_pylist() == [
        "kafka.log.LogSegment",
        "app.token=[redacted]",
        "kafka.server.KafkaApis",
        "app.token=[redacted]",
    ]
    assert first[1].column("logger").to_pylist() == ["kafka.log.LogSegment", "kafka.server.KafkaApis"]
    assert first[3].column("logger").to_pylist() == ["app.token=[redacted]"] * 2
    # without the memo (emptied before every block) the tables come out the same
    fresh = []
    for b in blocks:
        rc._SEEN.clear()
        fresh.append(rc.redact_table("events", b, skip=("message",)))
    assert all(a.equals(b) for a, b in zip(first, fresh))
    assert all(b.column("message").equals(t.column("message")) for b, t in zip(blocks, first))


def test_big_columns_are_prechecked_alone_and_few_distinct_texts_redacted_once(monkeypatch):
    """A column too big for the joint pre-check is checked on its own (on its distinct texts when
    they repeat), a column of nulls not at all; the flagged texts of a column of few distinct
    ones go through the rules once each; the values are those of redacting each text."""
    secret = FAILED_LOGIN.replace("password)", "password=hunter2)")
    monkeypatch.setattr(rc, "_OWN_PASS", 64)  # (a small frame: the same paths as a big one)
    many = 3 * rc._OWN_PASS  # (two in five of the repeated texts flagged: more than _OWN_PASS)
    repeated = [FAILED_LOGIN, None, "ok", secret, "group-7"] * (many // 5 + 1)
    distinct = [f"{FAILED_LOGIN} {i}" if i % 7 else f"token={i}x" for i in range(many)]
    df = pd.DataFrame(
        {
            "reason": pd.Series(repeated[:many], dtype="string"),
            "message": pd.Series(distinct, dtype="string"),
            "member": pd.Series([None] * many, dtype="string"),
        }
    )
    want = {c: [redact_text(v) if isinstance(v, str) else None for v in df[c].astype(object)] for c in df}
    handed: list = []
    real = rc.redact_texts

    def recording(arr):
        handed.append(len(arr))
        return real(arr)

    monkeypatch.setattr(rc, "redact_texts", recording)
    out = redact_frame("demo", df.copy())
    for c, values in want.items():
        assert [None if v is pd.NA else v for v in out[c].astype(object)] == values, c
    assert out["reason"].tolist()[3] == FAILED_LOGIN.replace("password)", "password=[redacted])")
    # the repeated column's flagged texts: its three distinct ones (each alone: at most _FEW)
    assert handed == [len([t for t in distinct if t.startswith("token=")])]
    hits = rc._hits([pa.array(repeated[:many]), pa.array([None] * many, pa.string()), pa.array(distinct)])
    pre = [
        np.flatnonzero(rc._bools(pc.match_substring_regex(pa.array(a), PREFILTER))) for a in (repeated[:many], distinct)
    ]
    assert np.array_equal(hits[0], pre[0]) and not len(hits[1]) and np.array_equal(hits[2], pre[1])


# --- the compiled pre-check over whole columns ----------------------------------------------------
PRECHECK_PIECES = st.sampled_from(
    "pass PWD secret token api_key Credential accesskey auth.user.info jaas private-key user_ Bearer :// : @ "
    'eyJ ghp_ xoxb- AIza AKIA apiKey = " ſecret toKen é 日本 \x7f \x01 QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIz '
    "ISR updated to 1,2 Preparing to rebalance".split(" ")
    + [" ", "\t", "\n", "\r", "", "~", "\x1f", "\x80", "\x7e\x7f", "0123456789abcdef"]
)


@pytest.mark.skipif(rc._compiled is None, reason="the compiled pre-check is not built")
@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.lists(PRECHECK_PIECES, max_size=10).map("".join)), max_size=40),
    st.booleans(),
    st.integers(0, 3),
)
def test_the_compiled_precheck_finds_what_re2_finds(texts, large, cut):
    # the same positions as RE2 over every value, for either string type, a slice, nulls and
    # texts with case folded beyond ASCII (the long s, which RE2 reads as an s); and the
    # not-plain code where the rules' own test finds a character outside plain ASCII text
    arr = pa.array(texts, pa.large_string() if large else pa.string())[cut:]
    want = np.flatnonzero(np.asarray(pc.fill_null(pc.match_substring_regex(arr, PREFILTER), False)))
    assert rc.precheck_hits(arr).tolist() == want.tolist()
    codes = rc._suspects(arr)
    assert codes is not None and len(codes) == len(arr)
    assert set(want.tolist()) <= set(np.flatnonzero(codes & 1).tolist())  # a superset of RE2's
    odd = pc.fill_null(pc.match_substring_regex(arr, r"[^\t\n\r\x20-\x7e]"), False).to_pylist()
    assert ((codes & 2) > 0).tolist() == odd


@pytest.mark.skipif(rc._compiled is None, reason="the compiled pre-check is not built")
def test_the_compiled_precheck_refuses_offsets_that_do_not_fit():
    data = b"plaintoken"
    good = np.array([0, 5, 10], np.int32).tobytes()
    assert rc._compiled.suspects(good, data, None, 0, 2, False) == b"\x00\x01"
    with pytest.raises(ValueError, match="offsets"):
        rc._compiled.suspects(np.array([0, 7, 3], np.int32).tobytes(), data, None, 0, 2, False)
    with pytest.raises(ValueError, match="offsets"):
        rc._compiled.suspects(np.array([0, 5, 99], np.int32).tobytes(), data, None, 0, 2, False)
    with pytest.raises(ValueError, match="too short"):
        rc._compiled.suspects(good, data, None, 1, 5, False)
    with pytest.raises(ValueError, match="negative"):
        rc._compiled.suspects(good, data, None, -1, 1, False)


@pytest.mark.skipif(rc._compiled is None, reason="the compiled pre-check is not built")
def test_the_compiled_precheck_sees_one_odd_character_wherever_it_stands():
    # eight bytes are looked at together: one character below 0x20, at 0x7f or beyond ASCII in
    # every position of texts up to three words long, next to plain text that borrows or carries
    texts = [
        pre * k + ch + "x" * m
        for ch in ("\t", "\n", "\r", "\x00", "\x1f", "\x7f", "é", "ſ", " ", "~")
        for pre in ("a", "\x20", "\x7e")
        for k in range(0, 20)
        for m in (0, 3)
    ]
    arr = pa.array(texts, pa.large_string())
    codes = rc._suspects(arr)
    assert codes is not None
    odd = pc.fill_null(pc.match_substring_regex(arr, r"[^\t\n\r\x20-\x7e]"), False).to_pylist()
    assert ((codes & 2) > 0).tolist() == odd
    assert sum(odd) == 5 * 3 * 20 * 2  # the NUL, 0x1f, DEL, é and the long s
    want = np.flatnonzero(np.asarray(pc.fill_null(pc.match_substring_regex(arr, PREFILTER), False)))
    assert rc.precheck_hits(arr).tolist() == want.tolist()
