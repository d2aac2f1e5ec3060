"""The lines of a file its parser did not reach, kept in ``unparsed``: when a parser stops on an
exception, the rest of the file is read again so its lines still add up
(``ctx.parsed + unparsed rows == ctx.lines``)."""

from __future__ import annotations

from kitlib.formats import Context, decode_line, iter_lines, unparsed_frame


def account_rest(src, ctx, error: BaseException, reason_prefix: str = "not read: the parser stopped"):
    """After a parser stopped on ``error``: (table, frame) pairs for the lines it had not
    reached (``ctx.lines`` + 1 onwards), kept in ``unparsed`` with the reason; ``ctx.lines`` is
    then the file's full line count. Reads the file again with bounded memory."""
    done = ctx.lines
    probe = Context(src)
    reason = f"{reason_prefix} ({type(error).__name__})"
    ns, ts = [], []
    for n, raw in iter_lines(src, probe):
        if n <= done:
            continue
        ns.append(n)
        ts.append(decode_line(raw)[0][:4096])
        if len(ns) >= 100_000:
            yield "unparsed", unparsed_frame(src, ns, ts, reason)
            ns, ts = [], []
    if ns:
        yield "unparsed", unparsed_frame(src, ns, ts, reason)
    ctx.lines = max(ctx.lines, probe.lines)
