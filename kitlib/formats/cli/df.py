"""``df`` output (GNU coreutils and BSD/macOS) -> the ``disk_usage`` table: the size, use and
free space of the file systems a broker's log dirs live on. Kafka's tools and JMX report the
bytes a log dir holds, never the disk's capacity; ``df`` on the broker host does.

The header says the unit of the number columns::

    Filesystem     1K-blocks     Used Available Use% Mounted on        (df -k, df)
    Filesystem     1024-blocks   Used Available Capacity Mounted on    (df -P, df -kP, BSD df -k)
    Filesystem     1B-blocks     Used Available Use% Mounted on        (df -B1; -B<size>, -m: 1M-blocks)
    Filesystem      Size  Used Avail Use% Mounted on                   (df -h: 20G, 1.5T, 512M)
    Filesystem     Type  1K-blocks  Used Available Use% Mounted on     (df -T: one more column)

BSD/macOS add ``iused ifree %iused`` before the mount point. A mount point may hold spaces (it is
the rest of the line). Without ``-P``, GNU df of older versions puts a long device name on a line
of its own and the numbers on the next: the two make one row. Several runs may be appended to
one file, each after a time line (``date -Is; df -k /var/lib/kafka``).

``df -h`` rounds up to one decimal of its unit, so its sizes are approximate (``approx`` True);
``-H`` prints powers of 1000 under the same header and is read as ``-h`` (2.4 % high at G).

Example:
    >>> detect(b"Filesystem     1K-blocks     Used Available Use% Mounted on\\n", None)
    True
    >>> _size("1.5T", 1024), _size("512M", 1000), _size("0", 1024)
    (1649267441664, 512000000, 0)
"""

from __future__ import annotations

import re

from kitlib import tables
from kitlib.formats import register
from kitlib.formats.cli.frame import ToolOutput, head_lines

tables.declare(
    "disk_usage",
    "File systems from `df` output (-k, -h, -B1, -P, -T; GNU and BSD): size, used and free space per mount "
    "point, one row per file system and run.",
    [
        ("snapshot_ts", "ts", "time line before the run, if the file has one"),
        ("filesystem", "str", "device or file system name as printed"),
        ("fs_type", "str", "file system type (df -T), else empty"),
        ("size_bytes", "int", "size in bytes"),
        ("used_bytes", "int", "used bytes"),
        ("avail_bytes", "int", "bytes available to unprivileged users (excludes reserved blocks)"),
        ("use_pct", "float", "use as printed (Use% / Capacity)"),
        ("mount", "str", "mount point"),
        ("unit", "str", "unit of the printed numbers: 1K-blocks, 1024-blocks, 1B-blocks, Size (-h), ..."),
        ("approx", "bool", "true when the sizes were printed rounded (df -h / -H)"),
    ],
)

_HEADER = re.compile(
    r"^Filesystem\s+(?:(?P<type>Type)\s+)?(?P<unit>\d+[KMGT]?B?-blocks|\d+-blocks|Size)\s+Used\s+Avail(?:able)?\s+"
    r"(?:Use%|Capacity)\s+(?P<inodes>iused\s+ifree\s+%iused\s+)?Mounted on\s*$"
)
_SUFFIX = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_HUMAN = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPE]?)(?:i?B?)?$")
_NUM = re.compile(r"^\d+$")
_PCT = re.compile(r"^(\d+(?:\.\d+)?)%$|^-$")


def detect(head: bytes, src) -> bool:
    return any(_HEADER.match(ln.strip()) for ln in head_lines(head, 6))


def _size(text: str, base: int) -> int | None:
    """Bytes of a ``df -h`` / ``-H`` value (``1.5T``, ``512M``, ``0``); None when not one."""
    m = _HUMAN.match(text.strip())
    if not m:
        return None
    return int(round(float(m.group(1).replace(",", ".")) * base ** _SUFFIX[m.group(2)]))


def _block(unit: str) -> int:
    """Bytes per block of a ``<n><K|M|G>-blocks`` header (``1K-blocks`` = 1024, ``1024-blocks``)."""
    m = re.match(r"^(\d+)([KMGT]?)B?-blocks$", unit)
    if not m:
        return 1024
    return int(m.group(1)) * 1024 ** _SUFFIX[m.group(2)]


class Df(ToolOutput):
    """``df``: a header line sets the unit; each following line is one file system."""

    unit: str | None = None
    has_type: bool = False
    inodes: bool = False
    human_base: int = 1024
    pending: tuple[int, str] | None = None  # a device name alone on its line (GNU wrapping)

    def line(self, n: int, text: str) -> None:
        out = self.out
        m = _HEADER.match(text.strip())
        if m:
            self.unit, self.has_type, self.inodes = m.group("unit"), bool(m.group("type")), bool(m.group("inodes"))
            self.pending = None
            out.structure()
            return
        if self.unit is None:
            out.bad(n, text, "df row before a header line")
            return
        cells = text.split()
        if len(cells) == 1 and not text[:1].isspace():
            if self.pending:
                out.bad(self.pending[0], self.pending[1], "df device name without its numbers")
            self.pending = (n, cells[0])
            out.structure()
            return
        first = n
        if self.pending and text[:1].isspace():
            first, cells = self.pending[0], [self.pending[1], *cells]
        elif self.pending:
            out.bad(self.pending[0], self.pending[1], "df device name without its numbers")
        self.pending = None
        self._row(first, n, text, cells)

    def _row(self, first: int, n: int, text: str, cells: list[str]) -> None:
        out = self.out
        fixed = 5 + self.has_type + (3 if self.inodes else 0)
        if len(cells) < fixed + 1:
            out.bad(n, text, f"df row with {len(cells)} fields, expected at least {fixed + 1}")
            return
        fs = cells[0]
        fs_type = cells[1] if self.has_type else None
        i = 1 + self.has_type
        size, used, avail, pct = cells[i : i + 4]
        mount = " ".join(cells[fixed:])
        pm = _PCT.match(pct)
        human = self.unit == "Size"
        if human:  # -h (powers of 1024); -H prints powers of 1000 under the same header
            nums = [_size(v, self.human_base) for v in (size, used, avail)]
        else:
            block = _block(self.unit or "")
            nums = [int(v) * block if _NUM.match(v) else None for v in (size, used, avail)]
        if any(v is None for v in nums) or not pm:
            out.bad(n, text, "df row whose size, used, available or use% is not a number")
            return
        out.add(
            "disk_usage",
            first,
            snapshot_ts=self.snap,
            filesystem=fs,
            fs_type=fs_type,
            size_bytes=nums[0],
            used_bytes=nums[1],
            avail_bytes=nums[2],
            use_pct=float(pm.group(1)) if pm.group(1) else None,
            mount=mount,
            unit="Size (-h)" if human else self.unit,
            approx=human,
        )
        out.structure()

    def time(self, t) -> None:
        self.snap = t  # the unit stays: `date; df -k | grep kafka` drops the header of later runs

    def end(self) -> None:
        if self.pending:
            self.out.bad(self.pending[0], self.pending[1], "df device name without its numbers")


register(
    "df",
    detect=detect,
    parse=Df.parse,
    tables=("disk_usage",),
    priority=26,
    doc="df output (-k, -h, -B1, -P, -T; GNU coreutils and BSD): file system size, used and free bytes",
)
