"""Search every line of a bundle, and the raw lines around a hit.

:func:`search` answers from the bundle's events with DuckDB: over the Parquet files of an ingest
output (nothing loaded into pandas but the page asked for), or over the events held in memory.
Plain text is matched in *smart case* (as in ripgrep and vim: all lower case matches any case,
one capital letter makes it exact, which reads far less), a regular expression with RE2 (``regexp_matches``);
level, host and logger narrow it, and the window cuts it. Only one page of hits comes back, with
the number of hits: exact when the page is the last one (then the page's scan alone answers),
else counted up to :data:`COUNT_CAP` ("at least 10,000 lines match"), a count that stops as soon
as it gets there.

:func:`context` reads the lines around a hit from the bundle's own file (decompressed as the
parsers read it; a plain file only between two of its sparse line offsets,
:mod:`kitlib.explore.lines`), redacted; :func:`context_html` shows them escaped, the hit's line
marked.

Example:
    >>> import kitlib
    >>> b = kitlib.open("sample_data/isr-flapping")                  # doctest: +SKIP
    >>> r = search(b, "Shrinking ISR", level="INFO")                 # doctest: +SKIP
    >>> r.total, r.rows.iloc[0]["where"]                             # doctest: +SKIP
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import pandas as pd

from kitlib.display.markup import HTML, esc
from kitlib.ingestion.store import duckdb_connection
from kitlib.redact import redact_text
from kitlib.window import Window, sql_values

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
COLUMNS = ["host", "ts", "where", "level", "logger", "message"]
ORDERS = {"time": "ts", "host": "host", "level": "level", "logger": "logger", "file:line": "file, line"}
MESSAGE_CHARS = 2000  # a hit's message is shown up to this many characters (its context shows all)


@dataclass
class Query:
    """What to look for: ``text`` (plain, in smart case: case-insensitive when all lower case, else
    exact; a RE2 regular expression when
    ``regex``), ``level`` (one level, ``"WARN+"`` for that level and worse, or a list), ``host``
    (names, comma-separated or a list), ``logger`` (part of the logger's name) and the window."""

    text: str = ""
    regex: bool = False
    level: str | list[str] | None = None
    host: str | list[str] | None = None
    logger: str = ""
    window: Window = field(default_factory=Window)

    def levels(self) -> list[str] | None:
        """The levels asked for, or None for every level.

        Example:
            >>> Query(level="WARN+").levels()
            ['WARN', 'ERROR', 'FATAL']
        """
        lv = self.level
        if not lv:
            return None
        if isinstance(lv, str):
            lv = lv.strip().upper()
            if lv.endswith("+") and lv[:-1] in LEVELS:
                return list(LEVELS[LEVELS.index(lv[:-1]) :])
            return [v.strip() for v in lv.split(",") if v.strip()] or None
        return [str(v).upper() for v in lv] or None

    def hosts(self) -> list[str] | None:
        from kitlib.params import as_list

        return as_list(self.host)

    def _plain(self) -> str:
        """The plain-text condition, in smart case. Any case means ``lower(message)`` contains the
        text; for ASCII text, a message that is all ASCII (as many bytes as characters) is matched
        by RE2 without case instead, the same answer for such a message at a third less CPU than
        lower-casing it; any other message still goes through ``lower()`` (which folds e.g. the
        Kelvin sign into ``k`` where RE2 would not agree).

        Example:
            >>> Query(text="ISR").where()
            "contains(message, 'ISR')"
            >>> Query(text="isr").where()
            "CASE WHEN strlen(message) = length(message) THEN regexp_matches(message, '(?i)isr') ELSE contains(lower(message), 'isr') END"
            >>> Query(text="über").where()
            "contains(lower(message), 'über')"
        """
        if self.text != self.text.lower():
            return f"contains(message, {_lit(self.text)})"
        lowered = f"contains(lower(message), {_lit(self.text)})"
        if not (self.text.isascii() and self.text.isprintable()):
            return lowered
        pattern = "(?i)" + re.escape(self.text)
        return f"CASE WHEN strlen(message) = length(message) THEN regexp_matches(message, {_lit(pattern)}) ELSE {lowered} END"

    def to_dict(self) -> dict:
        """The query as plain values (what a pinned view stores)."""
        return {
            "text": self.text,
            "regex": self.regex,
            "level": self.level,
            "host": self.hosts(),
            "logger": self.logger,
        }

    def where(self) -> str:
        """The query as a DuckDB ``where`` condition over the events."""
        cond = [] if self.window.whole else [self.window.sql("ts")]
        if self.text:
            if self.regex:
                cond.append(f"regexp_matches(message, {_lit(self.text)})")
            else:
                cond.append(self._plain())
        levels = self.levels()
        if levels:
            cond.append(f"CAST(level AS VARCHAR) IN ({sql_values(levels)})")
        hosts = self.hosts()
        if hosts:
            cond.append(f"CAST(host AS VARCHAR) IN ({sql_values(hosts)})")
        if self.logger:
            cond.append(f"contains(lower(CAST(logger AS VARCHAR)), {_lit(self.logger.lower())})")
        return " and ".join(cond) or "true"


@dataclass
class Hits:
    """One page of hits: ``rows`` (host, ts, where = file:line, level, logger, message, plus
    ``file`` and ``line``), ``total`` hits in all, the page's ``offset``, the seconds taken, and
    ``error`` (a message for the user, e.g. a bad regular expression) when the search failed."""

    rows: pd.DataFrame
    total: int
    offset: int = 0
    seconds: float = 0.0
    error: str = ""
    capped: bool = False  # the count stopped at ``total``: at least that many lines match

    def describe(self) -> str:
        """One line: how many hits and which are shown.

        Example:
            >>> Hits(pd.DataFrame(index=range(25)), 10_000, capped=True, seconds=0.2).describe()
            'at least 10,000 lines match; 1–25 shown (200 ms)'
        """
        if self.error:
            return self.error
        if not self.total:
            return "No line matches."
        last = self.offset + len(self.rows)
        many = f"at least {self.total:,}" if self.capped else f"{self.total:,}"
        return f"{many} lines match; {self.offset + 1:,}–{last:,} shown ({self.seconds * 1000:.0f} ms)"


def _lit(text: str) -> str:
    """``text`` as a DuckDB string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def run_sql(bundle, query: str, events=None) -> pd.DataFrame:
    """``query`` over the bundle's ``events``: through :meth:`Bundle.sql` on an ingest output,
    else over the events in memory (the bundle's window already applied to them); over
    ``events`` (a frame or Arrow table: some of the stored events) when given."""
    if events is None and bundle.lazy("events"):
        return bundle.sql(query)
    con = duckdb_connection()
    try:
        con.register("events", bundle.table("events") if events is None else events)
        return con.execute(query).df()
    finally:
        con.close()


SEARCHED = ["host", "ts", "file", "line", "level", "logger", "message"]  # the columns a search reads


def _narrowed(bundle, q: Query):
    """The stored events a text search can match, from the trigram index
    (:mod:`kitlib.explore.textindex`); None to scan them all."""
    if not q.text or not bundle.lazy("events"):
        return None
    from kitlib.explore.textindex import candidates

    try:
        return candidates(bundle, q, SEARCHED)
    except (OSError, ValueError, KeyError):  # an index that cannot be read or built: the scan answers
        return None


COUNT_CAP = 10_000  # hits are counted up to this many (or to the end of the page asked for)


def search(
    bundle,
    text: str = "",
    *,
    limit: int = 50,
    offset: int = 0,
    order: str = "time",
    desc: bool = False,
    count_cap: int | None = COUNT_CAP,
    **kw,
) -> Hits:
    """Hits of a :class:`Query` (``text`` and the keywords of :class:`Query`) over every event of
    ``bundle`` within its window: one page of ``limit`` rows from ``offset``, sorted by ``order``
    (a key of :data:`ORDERS`), and how many there are.

    The page comes first, from one scan (DuckDB's top-N reads the other columns only for the
    rows it keeps). When it is not full it is the last page, and its end is the number of hits:
    nothing else is read. Otherwise the hits are counted up to ``count_cap`` (at least to the
    page's end; None counts them all) by a scan that stops at the cap, so a search with many hits
    answers at once and ``capped`` says the count is a lower bound.

    On an ingest output a text search first asks the trigram index
    (:mod:`kitlib.explore.textindex`) which parts of the store can hold a hit, and runs the same
    query over those parts only (the same hits: the index only rules parts out)."""
    q = kw.pop("query", None) or Query(text=text, **kw)
    t0 = time.perf_counter()
    where = q.where()
    if bundle.lazy("events") and not bundle.window.whole:
        where = f"({bundle.where()}) and ({where})"
    limit, offset = max(0, int(limit)), max(0, int(offset))
    key = ORDERS.get(order, "ts")
    direction = " desc" if desc else ""
    keys = ", ".join(f"{k.strip()}{direction}" for k in key.split(","))
    capped = False
    events = _narrowed(bundle, q)  # None: every stored event is scanned
    try:
        rows = run_sql(
            bundle,
            f"""select CAST(host AS VARCHAR) as host, ts, CAST(file AS VARCHAR) as file, line,
                       CAST(level AS VARCHAR) as level, CAST(logger AS VARCHAR) as logger,
                       substr(message, 1, {MESSAGE_CHARS}) as message
                from events where {where}
                order by {keys}, file, line limit {limit} offset {offset}""",
            events,
        )
        if len(rows) < limit and (len(rows) or not offset):
            total = offset + len(rows)  # the last page: its end is the count
        else:
            cap = None if count_cap is None else max(int(count_cap), offset + limit)
            inner = f"select 1 from events where {where}" + ("" if cap is None else f" limit {cap + 1}")
            total = int(run_sql(bundle, f"select count(*) as n from ({inner})", events)["n"].iloc[0])
            if cap is not None and total > cap:
                total, capped = cap, True
    except Exception as e:  # noqa: BLE001 - a bad pattern is the user's to fix, not a traceback
        msg = str(e).split("\n")[0]
        return Hits(
            pd.DataFrame(columns=[*COLUMNS, "file", "line"]),
            0,
            offset,
            time.perf_counter() - t0,
            f"Search failed: {msg}",
        )
    rows["where"] = rows["file"].astype("string") + ":" + rows["line"].astype("Int64").astype("string")
    rows["message"] = rows["message"].map(redact_text, na_action="ignore")
    rows = rows[[*COLUMNS, "file", "line"]]
    return Hits(rows, total, offset, time.perf_counter() - t0, capped=capped)


def hits_table(hits: Hits, tz: str | None = None) -> pd.DataFrame:
    """A page of hits for showing: hit number, host, time, file:line, level, logger, message."""
    d = hits.rows[COLUMNS].copy()
    if tz and len(d):
        d["ts"] = pd.to_datetime(d["ts"], utc=True).dt.tz_convert(tz)
    d.insert(0, "hit", range(hits.offset + 1, hits.offset + 1 + len(d)))
    return d


def _sources(bundle) -> dict:
    """The bundle's files by the name tables cite them with (cached on the bundle)."""
    got = bundle.__dict__.get("_explore_sources")
    if got is None:
        from kitlib.sources.discover import discover

        got = {s.rel: s for s in discover(bundle.root)}
        bundle.__dict__["_explore_sources"] = got
    return got


def context(bundle, file: str, line: int, before: int = 5, after: int = 5) -> list[tuple[int, str]]:
    """Lines ``line - before`` to ``line + after`` of ``file`` (as tables cite it) in the bundle's
    own files, read as the parsers read them and redacted. Raises ``LookupError`` when the file is
    not in the bundle (e.g. an ingest output whose bundle has moved)."""
    from kitlib.explore.lines import from_line
    from kitlib.sources.reading import read_chunks

    src = _sources(bundle).get(str(file))
    if src is None:
        raise LookupError(f"{file} is not in the bundle folder {bundle.root}")
    lo, hi = max(1, int(line) - before), int(line) + after
    want = hi - lo + 1
    # a plain file is read from the indexed line at or before ``lo`` (kitlib.explore.lines), not from its start
    src, n = from_line(bundle, src, lo, hi)  # n: the number of the line that starts at the current position
    held: bytearray | None = None  # the content from the start of line ``lo`` on, once reached
    for chunk in read_chunks(src):
        if held is None:
            k = chunk.count(b"\n")  # chunks before the context are only counted, never split
            if n + k < lo:
                n += k
                continue
            pos = 0
            while n < lo:
                pos = chunk.index(b"\n", pos) + 1
                n += 1
            held = bytearray(chunk[pos:])
        else:
            held += chunk
        if held.count(b"\n") >= want:
            break
    lines = bytes(held or b"").split(b"\n")[:want]
    if lines and not lines[-1] and (held or b"").count(b"\n") < want:
        lines.pop()  # the file's last newline ends the last line; it starts no new one
    out = [(lo + i, raw.decode("utf-8", "replace").rstrip("\r")) for i, raw in enumerate(lines)]
    text = redact_text("\n".join(t for _, t in out))  # together: a secret may span lines
    return list(zip([k for k, _ in out], text.split("\n")))


def context_html(bundle, file: str, line: int, before: int = 5, after: int = 5) -> HTML:
    """:func:`context` as an escaped block, line numbers in the margin, the hit's line marked."""
    try:
        lines = context(bundle, file, line, before, after)
    except (LookupError, OSError) as e:
        return HTML(f"<p class='kit-context-missing'>{esc(e)}</p>", str(e))
    body = "".join(
        f"<div class='kit-context-line{' kit-hit' if n == int(line) else ''}' style='white-space:pre-wrap;"
        f"{'background:#fff3bf;' if n == int(line) else ''}'><span style='color:#868e96'>{n:>6}  </span>{esc(t)}</div>"
        for n, t in lines
    )
    head = f"<p><b>{esc(file)}:{int(line)}</b> (lines {lines[0][0] if lines else line}–{lines[-1][0] if lines else line}, redacted)</p>"
    return HTML(
        f"<div class='kit-context'>{head}<div style='font-family:monospace;font-size:12px;text-align:left'>{body}</div></div>",
        "\n".join(f"{n:>6}  {t}" for n, t in lines),
    )
