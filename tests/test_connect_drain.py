"""The Connect notebook's drain-model section, as a function: the task that failed most, its model
in a few lines and the what-if table, on seed 001's sample bundle and on bundles without failures."""

import pandas as pd
from samples import sample

from kitlib import tables
from kitlib.investigations.connect_offsets import analysis as offsets
from kitlib.investigations.connect_offsets import drain


def _worst(**kw) -> drain.WorstTask:
    b = sample("connect-offsets-2x")
    commits = offsets.filter_commits(b.commits)
    return drain.worst_task(b, offsets.task_summary(commits), commits, **kw)


def test_the_worst_task_of_seed001_and_its_what_if_rows():
    worst = _worst()
    assert worst.text().splitlines() == [
        "task my-connector-0: 32 of 120 commits failed",
        "  offset.flush.timeout.ms 5,000 ms; batch.size 16,384 bytes; linger.ms 0 ms; max.in.flight 1",
        "  records per request ~23.0 (metric records-per-request-avg)",
        "  outstanding at flush: median 38,669, max 61,389 (log)",
        "  acknowledged per timeout window: 17,320 -> round trip 6.64 ms (acknowledged during the timed-out flushes)",
    ]
    t = worst.table()
    assert t["setting"].tolist() == ["current", "proposed"] and "timeout_s" not in t
    assert t["batch.size"].tolist() == [16384, 327680] and t["linger.ms"].tolist() == [0, 10]
    assert t["requests_to_drain"].tolist() == [1682, 85] and t["fits_timeout"].tolist() == [False, True]
    assert t["timeout_ms"].tolist() == [5000.0, 5000.0]
    assert worst.whatif["drain_s"].round(2).tolist() == [11.17, 0.57]


def test_the_settings_tried_are_the_ones_given():
    t = _worst(new_batch_size=65536, new_linger_ms=5).table()
    assert t["batch.size"].tolist() == [16384, 65536] and t["linger.ms"].tolist() == [0, 5]


def test_no_failed_source_task_means_no_model():
    commits = tables.empty("commits")
    worst = drain.worst_task(None, offsets.task_summary(commits), commits)
    assert worst.model is None and worst.table().empty
    assert worst.text() == "No source task timed out or failed to commit in this window."


def test_a_model_lacking_the_round_trip_says_so_and_has_no_what_if():
    b = sample("connect-offsets-2x")
    commits = offsets.filter_commits(b.commits)
    commits = commits.assign(remaining=pd.Series(pd.NA, index=commits.index, dtype="Int64"))
    worst = drain.worst_task(b, offsets.task_summary(commits), commits)
    assert worst.model is not None and worst.whatif.empty and worst.table().empty
    assert "the drain model lacks" in worst.text().splitlines()[-1]
