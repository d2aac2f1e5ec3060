"""Which records each extractor is handed does not depend on what else shares their block of the
log: the records a selection picks from a whole block are picked again, all of them, from a
block of those records alone (where they are every row, so the message pattern runs over the
block's own column instead of over a copy of the rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kitlib
from kitlib import extract, registry, tables

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"


@pytest.mark.slow
def test_a_selection_does_not_depend_on_the_rest_of_the_block():
    registry.load()
    block = tables.to_arrow("events", kitlib.load_bundle(SAMPLES / "rebalance-storm", cache=False).events)
    whole = extract.select(block)
    patterned = [g for g in whole if extract.EXTRACTORS[g].contains]
    assert "group_events" in patterned and whole["group_events"].num_rows * 2 < block.num_rows
    for g, sel in whole.items():
        alone = extract.select(sel)
        assert alone[g].equals(sel), g
