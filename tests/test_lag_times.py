"""Lag snapshots get their times, and no missing value breaks a serialiser.

- a snapshot saved one per file with its time only in the file name takes that time, in every
  common stamp shape (``20261123T104241Z``, epoch seconds and milliseconds, ``2026-11-23_10-42-41``,
  ``2026-11-23T10:42:41+00:00``), and ``ts_source`` says where it came from;
- a ``date; kafka-consumer-groups --describe`` loop whose dates are glued to the last row of the
  snapshot before (Kafka 3.9 ends a group with members without a newline) gets one time per
  snapshot, in the three shapes ``date`` prints;
- the lag chart, the snapshot count and the consumer-stalled finding read the same snapshots;
- every finding id's numbers and evidence, filled with NaN, NaT, None, infinities and huge
  values, go through ``--json``, the terminal text, the notebooks' HTML and the report's summary
  page without an error, as JSON null and as "unknown".

The bundles are the synthetic cases of the adversarial corpus (tests/adversarial/cases/lag-*).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kitlib
from kitlib.cli import main
from kitlib.display import findings_html
from kitlib.findings import Finding, Triage, evidence, plain, triage_text, value_text
from kitlib.formats.cli.frame import glued_stamp, name_stamp
from kitlib.investigations.consumer_groups import lag

CASES = Path(__file__).resolve().parent / "adversarial" / "cases"
PER_FILE = CASES / "lag-per-file-names"
GLUED = CASES / "lag-date-glued"
T0 = pd.Timestamp("2026-11-23 10:42:41", tz="UTC")
MINUTES = [T0 + pd.Timedelta(minutes=i) for i in range(6)]
# a real row of Kafka 3.9's describe output for a group with members (tests/fixtures/cli shape)
ROW = (
    "billing         invoices        2          1500            4600            3100            "
    "consumer-billing-1-6f1c2b0e-3a55-4a8e-9d7c-1b2c3d4e5f60 /10.0.4.17      consumer-billing-1"
)


# --- times in file names --------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, tz, expected",
    [
        ("consumer-groups-describe-20261123T104241Z.txt", "Europe/Berlin", "2026-11-23 10:42:41"),
        ("cg-1795430561.txt", "Europe/Berlin", "2026-11-23 10:42:41"),  # date +%s
        ("cg-1795430561250.txt", "UTC", "2026-11-23 10:42:41.250"),  # epoch milliseconds
        ("lag-2026-11-23_10-42-41.txt", "UTC", "2026-11-23 10:42:41"),
        ("lag-2026-11-23_11-42-41.txt", "Europe/Berlin", "2026-11-23 10:42:41"),  # zone-less: the bundle's tz
        ("2026-11-23T10:42:41+00:00.txt", "Europe/Berlin", "2026-11-23 10:42:41"),  # date -Is
        ("2026-11-23T12:42:41+02:00.txt", "UTC", "2026-11-23 10:42:41"),
        ("snapshots/describe.20261123-104241.out", "UTC", "2026-11-23 10:42:41"),
        ("cg_20261123_1042.txt", "UTC", "2026-11-23 10:42:00"),  # minutes only
        ("lag 2026-11-23 10.42.41.txt", "UTC", "2026-11-23 10:42:41"),
        ("20261123104241.log", "UTC", "2026-11-23 10:42:41"),  # date +%Y%m%d%H%M%S
    ],
)
def test_a_time_is_read_from_the_file_name(name, tz, expected):
    assert name_stamp(name, tz) == pd.Timestamp(expected, tz="UTC")


@pytest.mark.parametrize(
    "name",
    [
        "consumer-groups.txt",
        "lag-2026-11-23.txt",  # a day is not a snapshot's time
        "cg-123456789.txt",  # nine digits: an id, not an epoch
        "cg-99999999999999999.txt",
        "cg-9999999999999.txt",  # epoch ms beyond what the tables hold
        "lag-2026-13-45_10-42-41.txt",  # no such month
        "lag-2026-11-23_25-61-00.txt",
        "2026-11-23T10:42:41/describe.txt",  # only the file's own name counts
    ],
)
def test_a_file_name_without_a_time_gives_none(name):
    assert name_stamp(name, "UTC") is None


def test_a_repeated_local_hour_in_a_file_name_is_not_guessed():
    # 02:30 happens twice on 2026-10-25 in Berlin: no time rather than one an hour off
    assert name_stamp("lag-2026-10-25_02-30-00.txt", "Europe/Berlin") is None
    assert name_stamp("lag-2026-10-25_03-30-00.txt", "Europe/Berlin") == pd.Timestamp("2026-10-25 02:30", tz="UTC")


# --- dates glued to a row -------------------------------------------------------------------
@pytest.mark.parametrize(
    "date_output",
    [
        "Mon Nov 23 10:42:41 UTC 2026",  # date (C locale)
        "2026-11-23T10:42:41Z",  # date -u +%FT%TZ
        "2026-11-23T10:42:41+00:00",  # date -Is
        "2026-11-23T11:42:41+01:00",  # date -Is in another zone
        "2026-11-23 10:42:41",  # date '+%F %T'
    ],
)
def test_a_date_glued_to_a_row_is_split_off(date_output):
    row, t = glued_stamp(ROW + date_output, "UTC")
    assert row == ROW and t == T0


def test_a_space_padded_day_from_date_is_split_off():
    row, t = glued_stamp(ROW + "Tue Nov  3 10:42:41 UTC 2026", "UTC")
    assert row == ROW and t == pd.Timestamp("2026-11-03 10:42:41", tz="UTC")


@pytest.mark.parametrize(
    "text",
    [
        ROW,
        "billing         orders          0          100             100             0               -               -               -",
        "Mon Nov 23 10:42:41 UTC 2026",  # a date alone is a time line, not a glued one
        ROW[:-1] + "1795430561",  # digits at the end of a row are not taken for an epoch
        "Consumer group 'billing' has no active members.",
    ],
)
def test_lines_without_a_glued_date_are_left_alone(text):
    assert glued_stamp(text, "UTC") == (text, None)


# --- the parser on the corpus cases ---------------------------------------------------------
@pytest.fixture(scope="module")
def per_file():
    return kitlib.load_bundle(PER_FILE)


@pytest.fixture(scope="module")
def glued():
    return kitlib.load_bundle(GLUED)


def _accounted(bundle, n_files):
    f = bundle.files[bundle.files["format"] == "consumer_groups"]
    assert len(f) == n_files
    assert (f["lines"] == f["parsed"] + f["unparsed"]).all()
    assert int(f["unparsed"].sum()) == 0 and not len(bundle.unparsed)


def test_one_snapshot_per_file_takes_the_time_in_its_name(per_file):
    _accounted(per_file, 6)
    go = per_file.group_offsets
    assert len(go) == 18
    by_file = go.groupby("file")["snapshot_ts"].agg(["min", "max", "size"])
    assert (by_file["min"] == by_file["max"]).all() and (by_file["size"] == 3).all()
    assert sorted(by_file["min"]) == MINUTES
    assert set(go["ts_source"]) == {"file name"}
    assert go["client_id"].eq("consumer-billing-1").all()


def test_a_glued_date_starts_the_next_snapshot(glued):
    _accounted(glued, 3)
    go = glued.group_offsets
    assert len(go) == 54  # 3 files x 6 snapshots x 3 partitions
    for _, rows in go.groupby("file"):
        assert sorted(rows["snapshot_ts"].unique()) == MINUTES
        assert (rows.groupby("snapshot_ts").size() == 3).all()
    assert set(go["ts_source"]) == {"content"}
    # the client id lost its glued date; the rows of each snapshot are the ones printed after its date
    assert go["client_id"].str.fullmatch(r"consumer-(billing|ledger|fraud-check)-1").all()
    first = go[(go["snapshot_ts"] == T0) & (go["group"] == "billing")]
    assert first["lag"].tolist() == [0, 0, 0] and first["line"].tolist() == [4, 5, 6]
    last = go[(go["snapshot_ts"] == MINUTES[-1]) & (go["group"] == "billing")]
    assert last["log_end_offset"].tolist() == [16200, 14900, 17000]


def test_a_time_line_in_the_file_wins_over_its_name(tmp_path):
    text = (GLUED / "ops-1" / "lag-loop-iso.txt").read_text()
    (tmp_path / "ops-1").mkdir()
    (tmp_path / "ops-1" / "cg-20250101T000000Z.txt").write_text(text)
    go = kitlib.load_bundle(tmp_path).group_offsets
    assert sorted(go["snapshot_ts"].unique()) == MINUTES and set(go["ts_source"]) == {"content"}


def test_rows_before_the_first_time_line_take_the_file_name_time(tmp_path):
    first = (PER_FILE / "ops-1" / "lag-2026-11-23_10-44-41.txt").read_text()
    (tmp_path / "lag-2026-11-23_10-44-41.txt").write_text(first + "\n2026-11-23T10:50:00Z" + first + "\n")
    go = kitlib.load_bundle(tmp_path).group_offsets
    assert go.groupby("ts_source")["snapshot_ts"].unique().map(list).to_dict() == {
        "file name": [pd.Timestamp("2026-11-23 10:44:41", tz="UTC")],
        "content": [pd.Timestamp("2026-11-23 10:50:00", tz="UTC")],
    }


# --- one set of snapshots for the chart, the count and the finding --------------------------
def test_chart_count_status_and_finding_agree_on_the_snapshots(per_file):
    history = lag.lag_history(per_file)
    assert set(history["ts_source"]) == {"file name"}
    assert lag.snapshot_count(history) == 6
    status = lag.partition_status(history)
    assert status["snapshots"].tolist() == [6, 6, 6] and set(status["status"]) == {"stalled"}
    chart = lag.group_lag(history)
    assert sorted(chart["ts"]) == MINUTES  # one point per snapshot on the time axis
    (f,) = kitlib.triage(per_file, investigations=["consumer_groups"]).findings
    assert f.id == "consumer-stalled" and f.numbers["snapshots"] == 6
    assert f.numbers["first_snapshot"] == T0 and f.numbers["last_snapshot"] == MINUTES[-1]
    assert "since 2026-11-23 10:43:41 UTC" in f.summary
    from kitlib.investigations.consumer_groups import charts

    spec = charts.lag_and_rebalances(history, per_file.group_events).to_dict()
    drawn = spec["datasets"][next(iter(spec["datasets"]))]
    assert len(drawn) == 18 and {d["ts"][:19] for d in drawn} == {f"{t:%Y-%m-%dT%H:%M:%S}" for t in MINUTES}


def _untimed_bundle(tmp_path, with_timed: bool):
    """Per-file snapshots whose names hold no time (``describe-a.txt`` ...), optionally next to
    the timed ones of the corpus case."""
    (tmp_path / "ops-1").mkdir()
    for i, src in enumerate(sorted((PER_FILE / "ops-1").iterdir())[:3]):
        (tmp_path / "ops-1" / f"describe-{'abc'[i]}.txt").write_text(src.read_text())
        if with_timed:
            (tmp_path / "ops-1" / src.name).write_text(src.read_text())
    return kitlib.load_bundle(tmp_path)


def test_snapshots_without_any_time_are_counted_judged_and_said_not_drawn(tmp_path):
    b = _untimed_bundle(tmp_path, with_timed=False)
    assert b.group_offsets["snapshot_ts"].isna().all() and b.group_offsets["ts_source"].isna().all()
    history = lag.lag_history(b)
    assert lag.snapshot_count(history) == 3 and len(history) == 9
    status = lag.partition_status(history)
    assert status["snapshots"].tolist() == [3, 3, 3]
    from kitlib.investigations.consumer_groups import charts

    note = charts.lag_and_rebalances(history, b.group_events)
    assert "9 lag snapshot rows carry no time" in note.text
    f = kitlib.triage(b, investigations=["consumer_groups"]).findings
    assert [x.numbers["snapshots"] for x in f] == [3]
    assert "since an unknown time" in f[0].summary
    text = triage_text(Triage(f, []))
    assert "first_snapshot = unknown" in text and "NaT" not in text and "?" not in text
    assert json.loads(json.dumps([x.to_dict() for x in f], allow_nan=False))[0]["numbers"]["first_snapshot"] is None


def test_untimed_rows_next_to_timed_ones_are_left_out_and_counted(tmp_path):
    b = _untimed_bundle(tmp_path, with_timed=True)
    history = lag.lag_history(b)
    assert history.attrs["untimed_left_out"] == 9 and history["ts"].notna().all()
    assert lag.snapshot_count(history) == 3
    assert lag.partition_status(history)["snapshots"].tolist() == [3, 3, 3]


# --- the command line on such bundles -------------------------------------------------------
@pytest.mark.parametrize("case, groups", [(PER_FILE, ["billing"]), (GLUED, ["billing", "fraud-check"])])
def test_triage_json_on_lag_snapshot_bundles(case, groups, capsys):
    rc = main(["triage", "--json", str(case)])
    out = capsys.readouterr().out
    found = json.loads(out)
    assert rc == 1  # findings
    stalled = [f for f in found if f["id"] == "consumer-stalled"]
    assert [f["numbers"]["group"] for f in stalled] == groups
    history = lag.lag_history(kitlib.load_bundle(case))
    status = lag.partition_status(history)
    for f in stalled:
        n = f["numbers"]
        assert n["first_snapshot"] == "2026-11-23T10:42:41+00:00" and n["last_snapshot"] == "2026-11-23T10:47:41+00:00"
        judged = status[status["group"] == n["group"]]
        assert n["snapshots"] == int(judged["snapshots"].max()) == 6
        assert n["snapshots"] == lag.snapshot_count(history[history["group"] == n["group"]])
        assert n["stalled_partitions"] == 3 and n["total_lag"] == int(judged["lag_last"].sum()) == 44_500


@pytest.mark.slow
def test_report_on_per_file_snapshots_shows_the_snapshots_the_finding_counts(tmp_path):
    from kitlib.report import report

    res = report(PER_FILE, tmp_path / "r", only=["consumer_groups"], log=lambda *a: None)
    assert not [n for n in res["notebooks"] if n["error"]]
    found = json.loads((tmp_path / "r" / "findings.json").read_text())
    assert [f["numbers"]["snapshots"] for f in found if f["id"] == "consumer-stalled"] == [6]
    page = (tmp_path / "r" / "consumer_groups.html").read_text()
    assert "6 lag snapshots" in page and "Lag per group and partition (snapshots)" in page
    assert "<code>snapshots</code> = 6" in page and "<code>first_snapshot</code> = 2026-11-23 10:42:41 UTC" in page
    assert "NaT" not in page


# --- no missing or huge value breaks a serialiser -------------------------------------------
HOSTILE = [
    None,
    float("nan"),
    np.float64("nan"),
    pd.NA,
    pd.NaT,
    np.datetime64("NaT"),
    np.timedelta64("NaT"),
    pd.Timedelta("NaT"),
    float("inf"),
    float("-inf"),
    np.float32("inf"),
    10**400,
    -(10**400),
    np.iinfo(np.int64).max,
    np.uint64(np.iinfo(np.uint64).max),
    1.7976931348623157e308,
    np.datetime64("9999-12-31T23:59:59"),
    pd.Timestamp.max,
    pd.Timestamp("2026-11-23 10:42:41", tz="UTC"),
    pd.Timedelta(minutes=5),
    np.bool_(True),
    [float("nan"), pd.NaT, 3],
    {"inner": float("inf")},
    "text with \x1b[31m escape",
]
scalars = st.one_of(
    st.sampled_from([v for v in HOSTILE if not isinstance(v, (list, dict))]),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2250, 1, 1)).map(pd.Timestamp),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=5), scalars, max_size=2))


def _finding_ids() -> list[str]:
    from kitlib import registry

    registry.load()
    ids = sorted({i for inv in registry.investigations() for i in inv.finding_ids})  # every detector's ids
    assert "consumer-stalled" in ids and len(ids) > 10
    return ids


FINDING_IDS = _finding_ids()


def _summary_page(findings, tmp_path) -> str:
    """The report's summary page for ``findings`` (the part of `kitlib report` that renders them)."""
    from kitlib import report

    summary = SimpleNamespace(
        time_span=None, hosts=["broker-1"], files=1, bytes=10, formats={"log4j": 1}, unparsed_lines=0, errors=[]
    )
    plan = SimpleNamespace(summary=summary, triage=Triage(findings, []), bundle_path=tmp_path, up_href="")
    return report.pages.render("bundle.html.j2", s=report.summary_view(plan, []))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fid=st.sampled_from(FINDING_IDS),
    numbers=st.dictionaries(st.sampled_from(["first_snapshot", "total_lag", "rate", "since", "n"]), values),
    ts=scalars,
    line=scalars,
    host=scalars,
)
def test_no_value_breaks_json_text_html_or_the_report(fid, numbers, ts, line, host, tmp_path):
    rows = pd.DataFrame({"file": ["b1/server.log"], "line": [line], "host": [host], "ts": [ts], "message": ["m"]})
    by_hand = {"file": "b1/server.log", "line": line, "host": host, "ts": ts, "text": "m"}  # a detector's own dict
    f = Finding(
        fid, "high", "summary", numbers=dict(numbers), recommendation="fix", evidence=[*evidence(rows), by_hand]
    )
    got = json.loads(json.dumps([f.to_dict()], allow_nan=False))[0]
    for k, v in numbers.items():
        p = got["numbers"][k]
        if v is None or v is pd.NA or (not isinstance(v, (list, dict, str)) and pd.isna(v)):
            assert p is None
        if isinstance(v, float) and math.isinf(v):
            assert p is None
    text = triage_text(Triage([f], []))
    html = findings_html([f]).html
    page = _summary_page([f], tmp_path)
    for shown in (text, html, page):
        assert "NaT" not in shown and "<NA>" not in shown
    for k, v in numbers.items():
        assert f"{k} = {value_text(v)}" in text
        if v is None or (not isinstance(v, (list, dict, str)) and pd.isna(v)):
            assert f"{k} = unknown" in text


@pytest.mark.parametrize("fid", FINDING_IDS)
def test_every_finding_id_serialises_every_hostile_value(fid, tmp_path):
    numbers = {f"v{i}": v for i, v in enumerate(HOSTILE)}
    rows = pd.DataFrame(
        {
            "file": ["a.log", "b.log"],
            "line": pd.array([None, 2**40], dtype="Int64"),
            "host": [None, "h"],
            "ts": [pd.NaT, pd.Timestamp("2026-11-23", tz="UTC")],
            "message": [None, "x"],
        }
    )
    f = Finding(fid, "medium", "s", numbers=numbers, evidence=evidence(rows))
    got = json.loads(json.dumps(f.to_dict(), allow_nan=False))
    assert [got["numbers"][f"v{i}"] for i in range(9)] == [None] * 9  # the missing ones
    assert got["numbers"]["v8"] is None and got["numbers"]["v9"] is None  # infinities
    assert got["numbers"]["v11"] == 10**400 and got["evidence"][0]["ts"] is None
    assert got["evidence"][0]["line"] is None and got["evidence"][1]["line"] == 2**40
    text = triage_text(Triage([f], []))
    assert "v4 = unknown" in text and "v8 = ∞" in text and "v9 = −∞" in text and "NaT" not in text
    for shown in (findings_html([f]).html, _summary_page([f], tmp_path)):
        assert "NaT" not in shown and "unknown" in shown


def test_plain_keeps_times_and_numbers():
    assert plain(np.datetime64("2026-11-23T10:42:41")) == "2026-11-23T10:42:41"
    assert plain(np.datetime64("9999-12-31")) == "9999-12-31T00:00:00"  # beyond the tables, still a time
    assert plain(pd.Timedelta(minutes=5)) == "P0DT0H5M0S"
    assert plain(np.int64(-3)) == -3 and plain(np.uint64(2**64 - 1)) == 2**64 - 1
    assert plain({"a": [np.float32(0.5), {1, 2}]}) == {"a": [0.5, [1, 2]]}
