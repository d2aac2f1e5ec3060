"""What a loaded bundle holds, in one typed object, and the one function that renders it as text.

Example:
    >>> s = BundleSummary(bundle="b", files=2, bytes=10, hosts=["broker-1"], rows={"events": 3})
    >>> BundleSummary.from_dict(s.to_dict()) == s
    True
    >>> print(summary_text(s).splitlines()[0])
    bundle   b
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields


@dataclass
class BundleSummary:
    bundle: str  # the path that was loaded
    files: int = 0  # files found
    bytes: int = 0  # their size on disk
    formats: dict[str, int] = field(default_factory=dict)  # detected format -> files
    hosts: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows
    unparsed_lines: int = 0
    errors: list[str] = field(default_factory=list)  # file problems and failed table builders
    unknown_files: list[str] = field(default_factory=list)  # files no format recognised
    not_read: list[str] = field(default_factory=list)  # paths not read as data, each with why
    time_span: list[str] | None = None  # first and last record time (ISO, UTC)
    seconds: float = 0.0  # time the load took
    window: list[str] | None = None  # set by kitlib.bundle.window
    hosts_filter: list[str] | None = None
    # tables derived from log records that an ingest left to be built on first use from the
    # stored events (kitlib.ingestion.derive); their rows are not in ``rows``
    deferred: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The JSON shape written to ``summary.json``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> BundleSummary:
        """Read back :meth:`to_dict` output (keys it does not know are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def nothing_read(self) -> str:
        """Why the bundle holds nothing to analyse ("no files", or "no file the kit recognises"
        when no table but the unparsed lines has a row), or "" when it holds something."""
        if self.files == 0:
            return "no files"
        if not any(v for k, v in self.rows.items() if k != "unparsed"):
            return "no file the kit recognises"
        return ""


def summary_text(s: BundleSummary) -> str:
    """The summary as ``kitlib ingest``, ``summary`` and ``triage`` print it. Names from the bundle
    (files, hosts) are kept on their line (:func:`kitlib.terminal.one_line`): a file name holding a
    newline cannot print a line of its own."""
    from kitlib.terminal import one_line

    lines = [
        f"bundle   {one_line(s.bundle)}",
        f"files    {s.files} ({s.bytes:,} bytes) in {s.seconds:.2f} s",
        "formats  " + ", ".join(f"{k}: {v}" for k, v in s.formats.items()),
        "hosts    " + ", ".join(one_line(h) for h in s.hosts),
        "span     " + (" -> ".join(s.time_span) if s.time_span else "-"),
        "rows     " + ", ".join(f"{k}: {v:,}" for k, v in s.rows.items() if k != "unparsed" and v),
        *(["derived  " + f"{len(s.deferred)} tables built on first use from the events"] if s.deferred else []),
        f"unparsed {s.unparsed_lines:,} lines",
    ]
    if s.unknown_files:
        lines.append("unknown  " + ", ".join(one_line(f) for f in s.unknown_files))
    for e in s.errors:
        lines.append(f"error    {one_line(e)}")
    for e in s.not_read[:20]:
        lines.append(f"not read {one_line(e)}")
    if len(s.not_read) > 20:
        lines.append(f"not read ... {len(s.not_read) - 20} more (the files table lists them all)")
    return "\n".join(lines)
