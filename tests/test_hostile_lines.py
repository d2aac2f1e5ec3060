"""Hostile content inside files: line endings, times and patterns that used to collapse records,
shift years, crash a parser, hang it, or place times an hour off. All input here is synthetic,
in the shapes Kafka, the JVM and JmxTool write (the same shapes as tests/adversarial/cases/)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kitlib
from kitlib.formats import Context, times
from kitlib.formats.cli import jmxtool
from kitlib.formats.logs import blocks, inference, layouts, log4j, parse_bytes, patterned
from kitlib.formats.logs import records as log_records
from kitlib.investigations.cluster_health import gclog
from kitlib.sources import SourceFile, read_chunks

CASES = Path(__file__).resolve().parent / "adversarial" / "cases"
UTC = "UTC"


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Every log4j test runs through the compiled scan and through its numpy reference."""
    if request.param == "compiled" and log_records.SCAN is None:
        pytest.skip("the compiled scan is not built")
    monkeypatch.setattr(log_records, "NATIVE", request.param == "compiled")
    return request.param


def records(n: int, stamp=lambda i: f"2026-11-23 06:47:{i:02d},{i:03d}") -> list[str]:
    return [
        f"[{stamp(i)}] INFO Completed fetch of partition orders-{i} (kafka.server.ReplicaManager)" for i in range(n)
    ]


def ingest(bundle: Path, tmp_path: Path) -> kitlib.Bundle:
    from kitlib.cli import main

    out = tmp_path / "out"
    assert main(["ingest", str(bundle), "--out", str(out), "--no-progress"]) == 0
    return kitlib.load(out)


# --- 1. lines ending with a lone CR -------------------------------------------------------------
def test_cr_only_file_gives_one_event_per_record(path):
    ev, un = parse_bytes(("\r".join(records(31)) + "\r").encode())
    assert len(ev) == 31 and len(un) == 0
    assert ev["line"].tolist() == list(range(1, 32))
    assert ev["message"].tolist() == [f"Completed fetch of partition orders-{i}" for i in range(31)]
    assert (ev["logger"] == "kafka.server.ReplicaManager").all()


def test_cr_only_continuations_and_a_last_line_without_cr(path):
    text = "\r".join(
        records(2)[:1] + ["java.lang.IllegalStateException: boom", "\tat a.B.c(B.java:1)"] + records(2)[1:]
    )
    ev, un = parse_bytes(text.encode())  # no CR after the last line
    assert ev["line"].tolist() == [1, 4] and ev["nlines"].tolist() == [3, 1]
    assert ev.loc[0, "message"].endswith("boom\n\tat a.B.c(B.java:1)")


def test_cr_lf_split_across_chunks_counts_once(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(b"a\r" * 40_000 + b"b\r\nc\r")  # the first 64 KiB: CRs, no LF
    src = SourceFile(p, "x.log", "h")
    # chunks of 40,001 bytes: the second ends between the CR and the LF of "b\r\n"
    assert b"".join(read_chunks(src, chunk=40_001)) == b"a\n" * 40_000 + b"b\nc\n"
    assert src.meta["cr_lines"]


def test_a_file_with_lf_is_left_alone(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(b"a\r\nb\rc\n")  # a CR inside a line of an LF file stays text
    src = SourceFile(p, "x.log", "h")
    assert b"".join(read_chunks(src)) == b"a\r\nb\rc\n" and "cr_lines" not in src.meta


def test_cr_only_bundle_accounts_every_line_in_every_reader(tmp_path):
    b = tmp_path / "bundle"
    (b / "broker-1").mkdir(parents=True)
    (b / "broker-1" / "server.log").write_bytes(("\r".join(records(31)) + "\r").encode())
    (b / "broker-1" / "connect.log").write_bytes(
        b"\r".join(b"2026-11-23 06:47:%02d,000 INFO [main] a.B - step %d" % (i, i) for i in range(7)) + b"\r"
    )
    (b / "broker-1" / "notes.txt").write_bytes(b"first\rsecond\rthird\r")
    bundle = ingest(b, tmp_path)
    files = bundle.files.set_index("file")
    assert files.loc["broker-1/server.log", ["lines", "parsed", "unparsed"]].tolist() == [31, 31, 0]
    assert files.loc["broker-1/connect.log", ["format", "lines", "parsed"]].tolist() == ["log-layout", 7, 7]
    assert files.loc["broker-1/notes.txt", ["lines", "unparsed"]].tolist() == [3, 3]
    assert all("lone CR" in files.loc[f, "note"] for f in files.index)
    ev = bundle.events
    assert (ev.file == "broker-1/server.log").sum() == 31 and (ev.file == "broker-1/connect.log").sum() == 7


# --- 2. four-digit years out of range -----------------------------------------------------------
def test_year_0001_is_unparsed_never_2001(path):
    data = "\n".join(records(1) + ["[0001-01-01 00:00:00,000] INFO year one (kafka.server.KafkaServer)"] + records(1))
    ev, un = parse_bytes((data + "\n").encode())
    assert ev["line"].tolist() == [1, 3] and (ev["ts"].dt.year == 2026).all()
    assert un[["line", "reason"]].values.tolist() == [[2, "timestamp year 0001 is out of range (1678-2261)"]]


@pytest.mark.parametrize(
    "pattern, line",
    [
        ("%d{ISO8601} %-5p [%t] %c - %m%n", "0001-01-01 00:00:00,000 INFO  [main] a.B - one"),
        ("%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %p %c - %m%n", "9999-01-01T00:00:00.000Z INFO a.B - far"),
    ],
)
def test_a_layout_year_out_of_range_costs_its_record(pattern, line):
    good = line.replace(line[:4], "2026", 1)
    ev, un = parse_bytes(f"{good}\n{line}\n  its continuation\n{good}\n".encode(), pattern)
    assert ev["line"].tolist() == [1, 4] and (ev["ts"].dt.year == 2026).all()
    year = line[:4]
    assert un[["line", "reason"]].values.tolist() == [
        [2, f"timestamp year {year} is out of range (1678-2261)"],
        [3, "follows an unreadable line"],
    ]


def test_a_two_digit_year_is_still_this_century():
    ev, _ = parse_bytes(b"26-11-23 06:47:01,000 INFO a.B - x\n", "%d{yy-MM-dd HH:mm:ss,SSS} %p %c - %m%n")
    assert ev.loc[0, "ts"] == pd.Timestamp("2026-11-23 06:47:01", tz=UTC)


# --- 3. times that overflow ---------------------------------------------------------------------
def test_gc_year_9999_costs_its_line_only():
    text = (CASES / "gc-year-9999" / "broker-1" / "kafkaServer-gc.log").read_text()
    rows, un = gclog.parse_text(text)
    assert rows["gc_id"].tolist() == [1, 3] and rows["line"].tolist() == [1, 3]
    assert un[["line", "reason"]].values.tolist() == [[2, "timestamp year 9999 is out of range (1678-2261)"]]


def test_gc_jdk8_far_years_both_ways():
    text = (CASES / "gc-year-9999" / "broker-1" / "gc-jdk8.log").read_text()
    rows, un = gclog.parse_text(text)
    assert rows["line"].tolist() == [1, 4]
    assert un["reason"].tolist() == [
        "timestamp year 9999 is out of range (1678-2261)",
        "timestamp year 1600 is out of range (1678-2261)",
    ]


@pytest.mark.parametrize("value, unit", [("9999-12-31T00:00:00Z", None), (1e30, "ms"), ("nonsense", None), (-1, "s")])
def test_the_safe_timestamp_never_raises(value, unit):
    assert times.timestamp(value, unit) is None


def test_iso_to_utc_flags_only_far_years():
    ts, far = times.iso_to_utc(
        pd.Series(["2026-11-23T06:47:01.063+0000", "9999-12-31T23:59:59.999+0000", "garbage"]),
        gclog.TS_FORMAT,
    )
    assert far.tolist() == [False, True, False]
    assert ts[0] == pd.Timestamp("2026-11-23 06:47:01.063", tz=UTC) and ts[1:].isna().all()


# --- 4. layout patterns built to backtrack ----------------------------------------------------
CRAFTED = "%d{ISO8601} %X{a}%X{b}%X{c}%X{d}%X{e}%X{f}%X{g}%X{h}%X{i}%X{j}%X{k}%X{l} %-5p %c - %m%n"


def test_a_backtracking_pattern_is_matched_in_linear_time():
    lay = layouts.compile_pattern(CRAFTED)
    crafted = [b"2026-11-23 06:47:02,000 " + b"a " * 400 + b"x"] * 200  # Python's re took minutes on one
    t = time.perf_counter()
    assert inference.score(lay, crafted) == (0, 0)
    buf = b"\n".join(crafted) + b"\n"
    assert patterned.last_header_start(buf, lay, False) == -1
    assert time.perf_counter() - t < 2


def test_the_backtracking_case_ingests_in_seconds(tmp_path):
    t = time.perf_counter()
    bundle = ingest(CASES / "backtracking-layout", tmp_path)
    assert time.perf_counter() - t < 30
    f = bundle.files.set_index("file").loc["connect-1/connect.log"]
    assert f.format == "log-layout" and (f.lines, f.parsed, f.unparsed) == (50, 50, 0)
    assert "log4j2.xml was refused" in f.note
    assert bundle.events.loc[bundle.events.file == "connect-1/connect.log", "line"].tolist() == list(range(1, 50, 5))


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("%d " + "%X{k}" * 600 + " %p %m%n", "characters long"),
        ("%d{" + "S" * 1200 + "} %p %m%n", "bounded expression"),
        ("%highlight{" * 2000 + "%d %p %m%n" + "}" * 2000, "characters long"),
    ],
)
def test_patterns_that_cannot_be_bounded_are_refused(pattern, why):
    with pytest.raises(layouts.PatternError, match=why):
        layouts.compile_pattern(pattern)


def test_a_crafted_definition_is_read_in_linear_time():
    text = "<Configuration>" + "<PatternLayout " * 60_000 + "<pattern>" * 60_000
    t = time.perf_counter()
    assert inference.patterns_in_definition(text, "log4j2.xml") == []
    ok = '<PatternLayout pattern="%d %p %c - %m%n"/><Property name="p">%d</Property><pattern>%t %m%n</pattern>'
    assert inference.patterns_in_definition(ok, "log4j2.xml") == ["%d %p %c - %m%n", "%t %m%n"]
    assert time.perf_counter() - t < 2


# --- 5. local times across daylight-saving changes, epoch units -----------------------------------
AUTUMN = [(1, 40), (1, 50), (2, 0), (2, 10), (2, 20), (2, 30), (2, 40), (2, 50)] + [
    (2, 0),
    (2, 10),
    (2, 20),
    (2, 30),
    (2, 40),
    (2, 50),
    (3, 0),
    (3, 10),
]


def autumn_log() -> bytes:
    return (CASES / "dst-repeated-hour" / "broker-1" / "server.log").read_bytes()


def test_the_repeated_hour_is_placed_from_the_order_of_the_lines(path):
    ev, _ = parse_bytes(autumn_log(), tz="Europe/Berlin")
    ts = ev["ts"]
    assert ts.is_monotonic_increasing and ts.is_unique  # strictly ordered in UTC
    assert ts.iloc[0] == pd.Timestamp("2026-10-24 23:40", tz=UTC)  # 01:40 CEST
    assert ts.iloc[2] == pd.Timestamp("2026-10-25 00:00", tz=UTC)  # 02:00 CEST, first pass
    assert ts.iloc[8] == pd.Timestamp("2026-10-25 01:00", tz=UTC)  # 02:00 CET, second pass
    assert ts.iloc[-1] == pd.Timestamp("2026-10-25 02:10", tz=UTC)  # 03:10 CET


def test_the_second_pass_is_found_across_blocks(tmp_path):
    p = tmp_path / "server.log"
    p.write_bytes(autumn_log())
    src = SourceFile(p, "server.log", "h", "Europe/Berlin")
    ctx = Context(src)
    evs = [t for name, t in log4j.parse(src, ctx, block_size=400, threads=1) if name == "events"]
    firsts = [t.column("line")[0].as_py() for t in evs]
    assert len(evs) >= 3 and any(4 <= f <= 14 for f in firsts)  # a block starts inside the repeated hour
    ts = np.concatenate([t.column("ts").cast("int64").to_numpy() for t in evs])
    assert (np.diff(ts) > 0).all()
    assert ctx.notes == [
        "12 records in the repeated hour of a daylight-saving change in Europe/Berlin: 6 read as its first pass "
        "(summer time), 6 as its second, from the order of the lines"
    ]


def test_the_spring_gap_is_read_with_the_offset_before_and_noted(tmp_path):
    bundle = ingest(CASES / "dst-repeated-hour", tmp_path)
    ev = bundle.events.set_index(["file", "line"])["ts"]
    assert ev[("broker-1/connect.log", 2)] == pd.Timestamp("2026-03-29 01:10", tz=UTC)  # 02:10 at +01:00
    assert ev[("broker-1/connect.log", 4)] == pd.Timestamp("2026-03-29 01:20", tz=UTC)  # 03:20 CEST
    notes = bundle.files.set_index("file")["note"]
    assert notes["broker-1/connect.log"].startswith("2 records at local times that do not exist in Europe/Berlin")
    assert notes["broker-1/server.log"].startswith("12 records in the repeated hour")


def test_times_away_from_a_change_take_one_subtraction():
    wall = np.array([pd.Timestamp("2026-07-01 12:00").value // 10**6])
    utc, amb, gaps = times.localize(wall, "Europe/Berlin")
    assert utc.tolist() == [pd.Timestamp("2026-07-01 10:00", tz=UTC).value // 10**6]
    assert not amb.any() and gaps == 0


def jmx(tmp_path: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame, Context]:
    p = CASES / "jmxtool-epoch-units" / "jmx" / name
    src = SourceFile(p, f"jmx/{name}", "b", size=p.stat().st_size)
    ctx = Context(src)
    out: dict[str, list] = {"metrics": [], "unparsed": []}
    for table, df in jmxtool.parse(src, ctx):
        out[table].append(df)
    cat = lambda k: pd.concat(out[k], ignore_index=True) if out[k] else pd.DataFrame(columns=["line", "reason"])
    return cat("metrics"), cat("unparsed"), ctx


def test_jmxtool_seconds_land_on_the_right_date(tmp_path):
    m, un, ctx = jmx(tmp_path, "broker-1.csv")
    assert m["ts"].tolist() == [
        pd.Timestamp("2026-11-22 23:43:20", tz=UTC),
        pd.Timestamp("2026-11-22 23:43:30", tz=UTC),
        pd.Timestamp("2026-11-22 23:43:50", tz=UTC),
    ]
    assert m["line"].tolist() == [2, 3, 6]
    assert un[["line", "reason"]].values.tolist() == [
        [4, "time 0 is zero: no epoch time"],
        [5, "time -5 is negative: no epoch time"],
    ]
    assert ctx.parsed + len(un) == ctx.lines == 6
    assert ctx.notes == ["time column read as epoch seconds (from the magnitude of its values)"]


@pytest.mark.parametrize(
    "name, unit, first",
    [
        ("broker-2.csv", "seconds", pd.Timestamp("2026-11-22 23:43:20.250", tz=UTC)),
        ("broker-3.csv", "microseconds", pd.Timestamp("2026-11-22 23:43:20", tz=UTC)),
        ("broker-4.csv", "milliseconds", pd.Timestamp("2026-11-22 23:43:20", tz=UTC)),
    ],
)
def test_jmxtool_epoch_units_from_magnitude(tmp_path, name, unit, first):
    m, un, ctx = jmx(tmp_path, name)
    assert m["ts"].iloc[0] == first and len(un) == 0
    assert ctx.notes == [f"time column read as epoch {unit} (from the magnitude of its values)"]


def test_epoch_unit_thresholds():
    assert [times.epoch_unit(np.array([v])) for v in (1.8e9, 1.8e12, 1.8e15, 1.8e18)] == ["s", "ms", "us", "ns"]
    assert times.epoch_unit(np.array([0.0, -1.0])) == "ms"


# --- 6. millions of tiny lines ------------------------------------------------------------------
@pytest.mark.slow
def test_a_million_unparsed_tiny_lines_come_in_bounded_pieces(path):
    n = 600_000
    data = records(1)[0].encode() + b"\n\xff\n" + b"x\n" * n
    block = memoryview(data)
    pieces = list(blocks.line_pieces(block, True))
    assert [p[1] for p in pieces] == [True, False, False]  # 600,002 lines in pieces of 262,144
    assert sum(len(p[0]) for p in pieces) == len(data)
    ev, un = parse_bytes(data)
    assert len(ev) == 1 and len(un) == n + 1
    assert un["line"].tolist() == list(range(2, n + 3))
    assert un["reason"].iloc[0] == "invalid UTF-8" and un["text"].iloc[0] == "\\xff"
    assert (un["reason"].iloc[1:262143] == "follows an unreadable line").all()
    # past the first piece, orphan lines (the reader cuts a block of tiny lines: no record is held whole)
    assert set(un["reason"].iloc[262143:]) == {
        "continuation cut off at a block boundary",
        "no record header before this line",
    }


def test_unparsed_rows_are_compact(path):
    n = 300_000
    data = b"\xff\n" + b"x\n" * n
    src = SourceFile(Path("x.log"), "x.log", "h")
    a = np.frombuffer(data, np.uint8)
    _, un, _, nlines = log4j.parse_block_numpy(memoryview(data), 0, src, True)
    assert nlines == n + 1 and len(un) == n + 1
    assert un.memory_usage(deep=False).sum() < 40 * len(un)  # no Python string per line
    assert un["text"].iloc[-1] == "x" and len(a) == len(data)
