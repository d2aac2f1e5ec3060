"""What a both-ways parse test compares: two results of a block parser (events table, unparsed
frame, lines in records, lines), column by column, the compiled scan's against its reference."""


def assert_same(native, reference):
    (ev, un, parsed, nlines), (ev0, un0, parsed0, nlines0) = native, reference
    assert (parsed, nlines) == (parsed0, nlines0)
    assert ev.schema == ev0.schema
    for name in ev.column_names:
        assert ev.column(name).to_pylist() == ev0.column(name).to_pylist(), name
    assert un.to_dict("list") == un0.to_dict("list")
