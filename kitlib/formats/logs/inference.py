"""Which layout a log file is written in. First match wins:

1. ``bundle.yaml``: ``layouts: {"connect/*.log": "%d{ISO8601} %-5p [%t] %c - %m%n"}`` (glob on the
   path relative to the bundle root -> pattern; ``json`` sends the files to the JSON log parser);
2. a layout definition shipped in the bundle (``log4j.properties``, ``log4j2.xml|yaml|properties``,
   ``logback.xml``): every pattern found is tried on the file's first lines, the best one is used;
3. inference from the file's first lines: timestamp shapes x field orders (:data:`INFER_PATTERNS`).

Each candidate is scored on the file's first lines, with and without container prefixes
(:func:`best_layout`); :func:`choose_layout` gives the file's layout, :func:`wrapped` whether it
reads the lines with their prefixes stripped.

Example:
    >>> best_layout(inferred_layouts(), b"2024-05-22 00:32:03,023 WARN  [main] kafka.Foo - Hello\\n")[0].pattern
    '%d{ANY_ISO} %-5p [%t] %c - %m%n'
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from kitlib.formats.logs import containers
from kitlib.formats.logs.blocks import head_lines
from kitlib.formats.logs.layouts import (
    Layout,
    PatternError,
    binary_lines,
    compile_pattern,
    head_matches,
    is_kafka_default,
    substitute,
)
from kitlib.sources import SourceFile, regular_files

_INFER_DATES = ["[%d{ANY_ISO}] ", "%d{ANY_ISO} ", "%d{ANY_TIME} ", "[%d{ANY_TIME}] ", ""]


# layouts read with one date only: Spark's log4j default (yy/MM/dd, a Kafka client in every
# Structured Streaming job), a bracketed level and thread (an ELK-friendly broker layout),
# Debezium's container images (the connector's MDC between bars, the logger last in brackets)
_INFER_EXTRA = [
    "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n",
    "[%d{ANY_ISO}] [%-5p] [%t] [%c] - %m%n",
    "%d{ANY_ISO} %-5p  %X{dbz.connectorType}|%X{dbz.connectorName}|%X{dbz.connectorContext}  %m   [%c]%n",
]


_INFER_BODIES = [
    "%p %m (%c) [%t]%n",  # Strimzi's broker layout
    "%p %m (%c)%n",  # Kafka's, behind another date or none (log service exports)
    "%-5p [%t] %c - %m%n",
    "[%t] %-5p %c - %m%n",  # logback's default
    "%-5p %c:%L - %m%n",  # Strimzi operator / many apps: %c{1}:%L
    "%-5p %c - %m%n",
    "%-5p: %c - %m%n",
    "%-5p [%c] (%t) %m%n",  # JBoss / WildFly
    "%-5p [%c] %m%n",
    "[%p] %m (%c)%n",
    "%p [%t] %c: %m%n",
    "%5p %pid --- [%t] %-40.40c : %m%n",  # Spring Boot's console default
    "%-5p %m%n",
]


INFER_PATTERNS = _INFER_EXTRA + [d + b for d in _INFER_DATES for b in _INFER_BODIES]


_INFER_CACHE: list[Layout] = []


_DEF_CACHE: dict[str, list[Layout]] = {}


_REFUSED: dict[str, list[str]] = {}  # bundle root -> why each refused definition pattern was refused


DEFINITION_NAMES = re.compile(r"(?i)^(?:.*log4j2?.*\.(?:properties|xml|ya?ml|json)|.*logback.*\.xml)$")


def score(layout: Layout, lines: list[bytes]) -> tuple[int, int]:
    """(record first lines matched, fields found on them) for these (unwrapped) lines; RE2 on
    all the lines at once."""
    if not lines:
        return 0, 0
    arr = binary_lines(lines)
    m = head_matches(layout, arr)
    ok = m.is_valid().to_numpy(zero_copy_only=False)
    heads = int(ok.sum())
    if not heads:
        return 0, 0
    found = np.zeros(len(lines), np.int64)
    for i in range(m.type.num_fields):
        if m.type.field(i).name == "pre":
            continue
        length = pc.fill_null(pc.binary_length(m.field(i)), 0).to_numpy(zero_copy_only=False)
        found += length > 0
    if layout.tail:
        t = pc.extract_regex(arr, layout.tail)
        suf = pc.binary_length(t.field("suf")).to_numpy(zero_copy_only=False)
        pre = pc.fill_null(pc.binary_length(m.field("pre")), 0).to_numpy(zero_copy_only=False)
        line_len = pc.binary_length(arr).to_numpy(zero_copy_only=False)
        t_ok = t.is_valid().to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore"):
            tail_after = t_ok & (line_len - np.nan_to_num(suf, nan=0).astype(np.int64) >= pre)
        found += np.where(tail_after, len([f for f in layout.fields if f in ("logger", "thread")]) + 1, 0)
    return heads, int(found[ok].sum())


PLAIN, CONTAINER, EXCERPT = (
    0,
    1,
    2,
)  # how a file's lines are read: as they are, without container prefixes, without an excerpt's decorations


def best_layout(candidates: list[Layout], head: bytes, min_share: float = 0.1) -> tuple[Layout | None, int]:
    """The candidate that finds the most fields (on record first lines) in ``head``, and how it
    reads the lines: :data:`PLAIN`, :data:`CONTAINER` (container prefixes stripped) or
    :data:`EXCERPT` (a pasted excerpt's indentation, prompts, line numbers and shipper columns
    stripped; only when that finds clearly more records). None when none finds any, or fewer
    than ``min_share`` of the non-blank lines start a record."""
    raw = [ln for ln in head_lines(head) if ln.strip()]
    if not raw:
        return None, PLAIN
    variants = [(PLAIN, raw)]
    strong = False
    if containers.has_prefix(raw):
        stripped = [containers.PREFIX.sub(b"", ln, count=1) for ln in raw]
        variants.append((CONTAINER, stripped))
        strong = _surely_wrapped(raw, stripped)
    if containers.decorated(raw) or containers.marked_lines(raw):
        variants.append((EXCERPT, [containers.strip_excerpt(ln) for ln in raw]))
    best: tuple[Layout | None, int] = (None, PLAIN)
    best_key = (0, 0, 0, 0, 0)
    heads_of: dict[int, int] = {}
    for i, lay in enumerate(candidates):
        for mode, lines in variants:
            h, f = score(lay, lines)
            if mode == EXCERPT:
                # an excerpt's reading must find more records than the others do (a stray
                # indented date in an ordinary log is no excerpt)
                plain_h = max(heads_of.get(i, 0), 0)
                if h < plain_h + max(1, plain_h // 10):
                    continue
            else:
                heads_of[i] = max(heads_of.get(i, 0), h)
            key = (int(mode == CONTAINER and strong), f + h, h, -i, -mode)
            if h and key > best_key:
                best, best_key = (lay, mode), key
    # stack-trace-heavy logs have few record first lines: 3 are enough whatever the share
    if best[0] is None or best_key[2] < min(3, max(1, min_share * len(raw))):
        return None, PLAIN
    return best


_CONTINUATION = re.compile(rb"^(?:\s|at |Caused by:|\.\.\. \d+ more|[\w$.]+(?:Exception|Error)\b)")


_UNAMBIGUOUS = re.compile(rb"^(?:[\w.-]+ +\| ?|\S+ (?:stdout|stderr) [FP] |\d{4}-\d\d-\d\dT[\d:]+\.\d{6,9})")


def _surely_wrapped(raw: list[bytes], stripped: list[bytes]) -> bool:
    """Is a leading RFC 3339 stamp a container's and not the layout's own date? Yes when a
    compose or CRI prefix or a micro/nanosecond stamp is there, or when continuation lines
    (stack frames, exceptions) carry the stamp too."""
    if any(_UNAMBIGUOUS.match(ln) for ln in raw):
        return True
    return any(r != s and _CONTINUATION.match(s) for r, s in zip(raw, stripped))


def wrapped(layout: Layout, head: bytes) -> int:
    """How ``layout`` reads this file's lines best: :data:`PLAIN`, :data:`CONTAINER` (prefixes
    stripped) or :data:`EXCERPT` (a pasted excerpt's decorations stripped)."""
    return best_layout([layout], head, 0.0)[1]


# a log service's export that kept only the message and the logger (``%m (%c)``, no date, no
# level: CloudWatch as MSK Connect writes it): a record is a line that does not start with a
# blank and ends with a logger in parentheses, a Java class name (``org.a.B``, ``a.b.C:123``) or
# one of Kafka's dotted logger names (``state.change.logger``); a stack frame starts with a blank
_JAVA_LOGGER = r"[a-z][\w$]*(?:\.[a-z][\w$]*)*\.(?:[A-Z][\w$]*|[a-z]+\.logger)(?::\d+)?"
MESSAGE_LOGGER = Layout(
    "%m (%c)%n",
    r"^(?P<pre>)[^\s\[{].* \(" + _JAVA_LOGGER + r"\)[ \t\r\n]*$",
    r"(?P<suf> +\((?P<logger>" + _JAVA_LOGGER + r")\)[ \t\r\n]*)$",
    r"^[ \t]*(?P<suf> +\((?P<logger>" + _JAVA_LOGGER + r")\)[ \t\r\n]*)$",
    ("logger",),
)


def inferred_layouts() -> list[Layout]:
    if not _INFER_CACHE:
        _INFER_CACHE.extend(compile_pattern(p) for p in INFER_PATTERNS)
        _INFER_CACHE.append(MESSAGE_LOGGER)  # last: any layout that finds more wins
    return _INFER_CACHE


_XML_LAYOUT = re.compile(r"(?is)PatternLayout\b[^>]*?\bpattern\s*=\s*\"([^\"]*)\"")


_XML_PATTERN = re.compile(r"(?is)pattern>([^<]*)")


_XML_PROPERTY = re.compile(r"(?is)property\s+name=\"([^\"]+)\"(?:\s+value=\"([^\"]*)\"|\s*>([^<]*))")


def patterns_in_definition(text: str, name: str) -> list[str]:
    """Layout patterns declared in a log4j/log4j2/logback configuration file's text, with
    ``${...}`` properties of the same file resolved.

    Example:
        >>> patterns_in_definition("log4j.appender.A.layout.ConversionPattern=%d %p %c - %m%n", "log4j.properties")
        ['%d %p %c - %m%n']
    """
    props: dict[str, str] = {}
    found: list[str] = []
    low = name.lower()
    if low.endswith(".properties"):
        kv = {}
        for ln in text.splitlines():
            ln = ln.strip()
            m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", ln)
            if m and ln[0] not in "#!":
                kv[m.group(1)] = m.group(2).strip()
        for k, v in kv.items():
            if k.startswith("property."):
                props[k[len("property.") :]] = v
        found = [v for k, v in kv.items() if re.search(r"(?i)\.(?:ConversionPattern|layout\.pattern)$", k)]
    elif low.endswith((".yaml", ".yml", ".json")):
        try:
            import yaml

            doc = yaml.safe_load(text)
        except Exception:  # noqa: BLE001 - a broken definition is just not used
            return []

        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    if str(k).lower() == "pattern" and isinstance(v, str):
                        found.append(v)
                    if str(k).lower() == "property":
                        for p in v if isinstance(v, list) else [v]:
                            if isinstance(p, dict) and "name" in p:
                                props[str(p["name"])] = str(p.get("value", ""))
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)

        walk(doc)
    else:  # XML: log4j2 <PatternLayout pattern=".."/> or <Pattern>..</Pattern>, logback <pattern>
        import html

        # one pass over the tags (the text split at '<'; each piece is a tag and the text after
        # it), each matched from its start: time linear in the file whatever it holds
        for piece in text.split("<"):
            if m := _XML_LAYOUT.match(piece):
                found.append(html.unescape(m.group(1)))
            elif m := _XML_PATTERN.match(piece):
                found.append(html.unescape(m.group(1)).strip())
            elif m := _XML_PROPERTY.match(piece):
                value = m.group(2) if m.group(2) is not None else m.group(3) or ""
                props[m.group(1)] = html.unescape(value)
    return [substitute(p, props) for p in found if p.strip()]


def bundle_root(src: SourceFile) -> Path | None:
    if src.path is None or not src.rel:
        return None
    depth = len(src.rel.split("/"))
    p = Path(src.path)
    return p.parents[depth - 1] if depth - 1 < len(p.parents) else None


def defined_layouts(root: Path | None) -> list[Layout]:
    """Layouts compiled from every layout definition under the bundle ``root`` (cached), minus
    Kafka's default (the fast path has it) and patterns this module cannot use."""
    if root is None:
        return []
    key = str(root)
    if key not in _DEF_CACHE:
        out, seen = [], set()
        refused = _REFUSED.setdefault(key, [])
        files = (
            [  # the bundle's own walk: any depth (rglob recursed, and a deep bundle lost its layouts)
                f for f in regular_files(root) if DEFINITION_NAMES.match(f.name) and f.stat().st_size < 1_000_000
            ]
            if root.is_dir()
            else []
        )
        for f in sorted(files):
            try:
                pats = patterns_in_definition(f.read_text(encoding="utf-8", errors="replace"), f.name)
            except OSError:
                continue
            for p in pats:
                if p in seen or is_kafka_default(p):
                    continue
                seen.add(p)
                try:
                    out.append(compile_pattern(p))
                except PatternError as e:
                    rel = f.relative_to(root).as_posix()
                    refused.append(f"a layout pattern of {rel} was refused ({e})")
        _DEF_CACHE[key] = out
    return _DEF_CACHE[key]


def manifest_layout(src: SourceFile) -> str | None:
    """The layout ``bundle.yaml`` forces on this file (a pattern or ``json``), if any."""
    return src.meta.get("layout")


def choose_layout(head: bytes, src: SourceFile) -> Layout | None:
    """The layout of a file: forced by the manifest, else the best definition found in the
    bundle, else inferred from ``head``. None when nothing fits (or the file is JSON)."""
    if "layout_chosen" in src.meta:
        return src.meta["layout_chosen"]
    forced = manifest_layout(src)
    lay = None
    if forced and forced.strip().lower() != "json":
        lay = compile_pattern(forced)
    elif not forced:
        first_line = containers.PREFIX.sub(b"", head.lstrip().split(b"\n", 1)[0], count=1)
        if not first_line.startswith(b"{"):
            root = bundle_root(src)
            lay = best_layout(defined_layouts(root), head, 0.2)[0]
            how = "another pattern of the bundle's definitions was used"
            if lay is None:
                lay = best_layout(inferred_layouts(), head)[0]
                how = "the layout was inferred from the lines"
            refused = _REFUSED.get(str(root), [])
            if lay is not None and refused:
                src.meta["layout_note"] = "; ".join(refused[:3]) + ": " + how
    src.meta["layout_chosen"] = lay
    return lay
