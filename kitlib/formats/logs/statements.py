"""Kafka's own log statements, read from its source: which class logs which sentence at which level,
and in which releases (the catalogue the kit ships as ``statements.json.gz``).

:func:`extract` reads a git clone of Apache Kafka without checking anything out: for each release
tag it lists the sources of the broker, controller, Connect, Streams and the Java clients
(``git ls-tree``), reads every distinct file content once (``git cat-file --batch``; a file unchanged
between releases is one blob, parsed once) and finds the log calls in it:

- Java: ``log.info("... {} ...", a, b)`` on any logger field or variable (a name ending in
  ``log``/``logger``); the logger is the class named where that field is made
  (``LoggerFactory.getLogger(X.class)``, ``logContext.logger(X.class)``, ``getLogger("name")``), else
  the file's own class.
- Scala: the ``Logging`` trait's ``info(...)``, ``warn(...)``, ... The logger is the innermost
  class or object around the call that mixes in ``Logging`` (or ``KafkaMetricsGroup``, which did
  before 2.0), else the outermost one; an object's name ends in ``$`` and a nested class's is
  ``Outer$Inner``, as the JVM names them; a ``loggerName`` override naming a class or a string wins.
  ``logIdent`` only prefixes the message and is not part of the template. ``stateChangeLogger.x(...)``
  logs to ``state.change.logger``; ``log.info(...)`` on a value declared with a type
  (``log: UnifiedLog``) logs as that type. A trait's calls are filed under the trait (the class that
  mixes it in is not known from the trait's file), and so are a base class's calls whose logger is
  made from ``getClass()`` (a subclass logs them under its own name). ``fatal`` counts as ``error``.

Releases the clone does not reach (Kafka 4.x: the clone at hand ends at trunk of October 2024) are
read from their released jars (``--jars VERSION``, from Maven's local repository) by
:mod:`kitlib.formats.logs.classfiles`, which finds the same log calls in the byte code; they are
listed after :data:`TRUNK`, and a statement both inputs hold keeps what its source says.

A template is the message's literal text with ``{}`` where a value goes: SLF4J's ``{}``, Scala's
``$x``/``${...}``, ``%s``-style slots of ``.format(...)`` and every non-literal term of a ``+``
concatenation. Each slot gets a type from its expression's name or the words around it
(:data:`TYPES`). A template's id is a hash of its text with blanks collapsed, so it keeps its id
across releases where only the variables' names changed. Calls whose message has no literal words
(``info(msg)``) are left out.

Example:
    >>> found = parse_source('log.warn("Fenced broker {} at epoch {}", brokerId, epoch);', "Foo.java")
    >>> [(f.level, f.template, f.types) for f in found]
    [('warn', 'Fenced broker {} at epoch {}', ('broker_id', 'epoch'))]
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from kitlib.formats.logs.slots import Found, Piece, _template

DATA_FILE = Path(__file__).with_name("statements.json.gz")
LEVELS = ("trace", "debug", "info", "warn", "error")
TRUNK = "trunk"  # the label of the clone's HEAD among the releases

# the types a placeholder may get, checked in this order (first match wins); else "any"
TYPES = ("exception", "epoch", "replica_list", "offset", "duration", "topic_partition", "partition", "topic",
         "broker_id", "group_id")  # fmt: skip

# sources of the broker, controller, Connect, Streams and the Java clients (main code only)
_INCLUDE = re.compile(
    r"^(core|clients|connect|streams|metadata|raft|server|server-common|storage|group-coordinator|"
    r"coordinator-common|transaction-coordinator|share|share-coordinator)/.*\.(scala|java)$"
)
_EXCLUDE = re.compile(r"/src/(test|testFixtures|it)/|^streams/(examples|quickstart|test-utils)/|^connect/test-plugins/")
_FINAL = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?$")
_RC = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?-rc(\d+)$")

_LEVEL = r"(trace|debug|info|warn|error|fatal)"
_JAVA_CALL = re.compile(r"(?<![\w$])((?:this\.)?\w*(?:[lL]og|LOG|[lL]ogger|LOGGER))\s*\.\s*" + _LEVEL + r"\s*\(")
_SCALA_CALL = re.compile(
    r"(?<![\w$.])" + _LEVEL + r"\s*\(|(?<![\w$])(\w*(?:[lL]og|LOG|[lL]ogger|LOGGER))\s*\.\s*" + _LEVEL + r"\s*\("
)
_ANY_CALL = re.compile(rb"(?:trace|debug|info|warn|error|fatal)\s*\(")
_LOGGER_DECL = re.compile(
    r"\b(\w+)\s*(?::\s*[\w.\[\]]+\s*)?=\s*[^;={}]{0,160}?\b(?:getLogger|logger|Logger)\s*\(\s*"
    r"(\"[^\"]*\"|classOf\[[\w.]+\](?:\.getName)?|[\w.]+\.class(?:\.getName\(\))?|(?:this\.)?getClass(?:\(\))?(?:\.getName(?:\(\))?)?)\s*\)"
)
_LOGGER_NAME = re.compile(r"\bloggerName\b[^=\n]*=\s*(\"[^\"]*\"|classOf\[([\w.]+)\]\.getName)")
_KNOWN_RECEIVERS = {"stateChangeLogger": "state.change.logger", "requestLogger": "kafka.request.logger"}
_SCALA_DECL = re.compile(r"\b(class|object|trait)\s+(\w+)")
_COMMENT_OR_STRING = re.compile(r'"""[\s\S]*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])\'|//[^\n]*|/\*[\s\S]*?\*/')
_FORMAT_SPEC = re.compile(r"%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?([sdfxXbcoeEgGn%])")


@dataclass(frozen=True)
class Statement:
    """One entry of the catalogue: a template as logged by one logger at one level, with the
    releases whose source holds it (oldest first; :data:`TRUNK` last) and the file it is in
    (in the newest of them)."""

    id: str
    logger: str
    level: str
    template: str
    types: tuple[str, ...]
    names: tuple[str, ...]
    releases: tuple[str, ...]
    source: str = ""

    @property
    def first(self) -> str:
        return self.releases[0] if self.releases else ""

    @property
    def last(self) -> str:
        return self.releases[-1] if self.releases else ""

    @property
    def from_source(self) -> bool:
        """Read from Kafka's source (its slots typed by the expressions that fill them), not only
        from a release's class files (``source`` is then ``<jar>:<class>``, slots typed by words)."""
        return ".jar:" not in self.source

    def typed(self) -> str:
        """The template with each slot named by its type: ``Shrinking ISR from {replica_list} to ...``."""
        parts = self.template.split("{}")
        out = [parts[0]]
        for i, rest in enumerate(parts[1:]):
            out.append("{" + (self.types[i] if i < len(self.types) else "any") + "}" + rest)
        return "".join(out)

    def to_dict(self) -> dict:
        return {"id": self.id, "logger": self.logger, "level": self.level, "template": self.template,
                "types": list(self.types), "names": list(self.names), "first": self.first,
                "last": self.last, "releases": list(self.releases), "source": self.source}  # fmt: skip


@dataclass
class Catalogue:
    """The releases read (oldest first) and every statement found in them."""

    releases: list[str]
    statements: list[Statement] = field(default_factory=list)
    notes: dict = field(default_factory=dict)


def template_id(template: str) -> str:
    """A template's id: a hash of its literal text, slots as ``{}`` and blanks collapsed."""
    norm = " ".join(template.split())
    return hashlib.blake2b(norm.encode(), digest_size=6).hexdigest()


# ---------------------------------------------------------------------------------------------
# Reading the clone


def _git(clone: Path | str, *args: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True, text=True).stdout


def _version(tag: str) -> tuple[int, ...]:
    m = _FINAL.match(tag) or _RC.match(tag)
    if not m:
        return ()
    return tuple(int(g) if g is not None else 0 for g in m.groups()[:4])


def release_tags(clone: Path | str, since: tuple[int, ...] = (0, 8)) -> list[str]:
    """Every final release tag from ``since`` on, oldest first; a release with release candidates but
    no final tag in the clone (one still being voted on) is represented by its last candidate."""
    tags = _git(clone, "tag", "--list").split()
    finals = {t for t in tags if _FINAL.match(t) and _version(t) >= since}
    have = {_version(t) for t in finals}
    last_rc: dict[tuple[int, ...], str] = {}
    for t in tags:
        m = _RC.match(t)
        if m and _version(t) >= since and _version(t) not in have:
            v = _version(t)
            if v not in last_rc or int(m.group(5)) > int(_RC.match(last_rc[v]).group(5)):  # type: ignore[union-attr]
                last_rc[v] = t
    return sorted(finals | set(last_rc.values()), key=lambda t: (_version(t), t))


def source_files(clone: Path | str, rev: str) -> list[tuple[str, str]]:
    """(blob id, path) of every main source file of the covered modules at ``rev``."""
    out = []
    for line in _git(clone, "ls-tree", "-r", rev).splitlines():
        meta, _, path = line.partition("\t")
        kind, blob = meta.split()[1:3]
        if kind == "blob" and _INCLUDE.match(path) and not _EXCLUDE.search(path):
            out.append((blob, path))
    return out


def read_blobs(clone: Path | str, blobs: Iterable[str]) -> Iterator[tuple[str, bytes]]:
    """(blob id, content) of every blob, read through one ``git cat-file --batch``."""
    ids = list(blobs)
    proc = subprocess.Popen(["git", "-C", str(clone), "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:
        for b in ids:
            stdin.write(b.encode() + b"\n")
        stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    for _ in ids:
        header = proc.stdout.readline().split()
        size = int(header[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        yield header[0].decode(), data
    writer.join()
    proc.wait()


# ---------------------------------------------------------------------------------------------
# Parsing one source file


def _skip_string(s: str, i: int, interp: bool) -> int:
    """Index past the string literal opening at ``s[i]`` (a quote); ``interp``: a Scala interpolated
    string, whose ``${...}`` may hold quotes of its own."""
    if s.startswith('"""', i):
        end = s.find('"""', i + 3)
        if end < 0:
            return len(s)
        while s.startswith('"', end + 3):  # a triple-quoted string may end in quotes
            end += 1
        return end + 3
    i += 1
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == '"' or c == "\n":
            return i + 1
        if interp and c == "$" and i + 1 < n and s[i + 1] == "{":
            i = _skip_group(s, i + 1, "{", "}")
            continue
        i += 1
    return n


def _skip_group(s: str, i: int, open_: str, close: str) -> int:
    """Index past the bracket group opening at ``s[i]``, strings and comments skipped."""
    depth, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i = _skip_string(s, i, i > 0 and s[i - 1] in "sf")
            continue
        if c == "'" and i + 2 < n and (s[i + 2] == "'" or (s[i + 1] == "\\" and i + 3 < n and s[i + 3] == "'")):
            i += 3 if s[i + 2] == "'" else 4
            continue
        if c == "/" and s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and s.startswith("/*", i):
            j = s.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _split_top(s: str, sep: str) -> list[str]:
    """``s`` split at every ``sep`` character outside brackets, strings and comments."""
    parts, start, i, n = [], 0, 0, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i = _skip_string(s, i, i > 0 and s[i - 1] in "sf")
            continue
        if c in "([{":
            i = _skip_group(s, i, c, ")]}"["([{".index(c)])
            continue
        if c == "/" and (s.startswith("//", i) or s.startswith("/*", i)):
            j = s.find("\n", i) if s[i + 1] == "/" else s.find("*/", i + 2) + 1
            i = n if j <= 0 else j + 1
            continue
        if c == sep:
            parts.append(s[start:i])
            start = i + 1
        i += 1
    parts.append(s[start:])
    return parts


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "b": "\b", "f": "\f"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(u+[0-9a-fA-F]{4}|.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)) if len(m.group(1)) == 1
                  else chr(int(m.group(1).lstrip("u"), 16)), text)  # fmt: skip


_LITERAL = re.compile(r'^(s|f|raw)?("""[\s\S]*"""|"[\s\S]*")((?:\s*\.\s*(?:stripMargin|trim)(?:\(\))?)*)\s*$')
_LITERAL_FORMAT = re.compile(r'^(s|f|raw)?("""[\s\S]*?"""|"(?:\\.|[^"\\])*")\s*\.\s*(?:format|formatted)\s*\(')
_STRING_FORMAT = re.compile(r"^String\s*\.\s*format\s*\(")


def _literal_pieces(prefix: str | None, body: str) -> list[Piece]:
    """A string literal's text (quotes included in ``body``) as pieces; Scala ``$x``/``${...}`` are slots
    when ``prefix`` is ``s`` or ``f``."""
    triple = body.startswith('"""')
    inner = body[3:-3] if triple else body[1:-1]
    if prefix not in ("s", "f"):
        return [inner if triple or prefix == "raw" else _unescape(inner)]
    pieces: list[Piece] = []
    i, start, n = 0, 0, len(inner)
    while i < n:
        c = inner[i]
        if c == "\\" and not triple:
            i += 2
            continue
        if c == "$" and i + 1 < n:
            text = inner[start:i]
            pieces.append(text if triple else _unescape(text))
            if inner[i + 1] == "$":
                pieces.append("$")
                i += 2
            elif inner[i + 1] == "{":
                end = _skip_group(inner, i + 1, "{", "}")
                pieces.append((inner[i + 2 : end - 1].strip(),))
                i = end
            else:
                m = re.match(r"[A-Za-z_]\w*", inner[i + 1 :])
                if not m:
                    pieces.append("$")
                    i += 1
                else:
                    pieces.append((m.group(0),))
                    i += 1 + m.end()
            if prefix == "f":  # f"$x%.2f": the format spec belongs to the slot
                m = re.match(r"%[-#+ 0,(]*\d*(?:\.\d+)?[a-zA-Z]", inner[i:])
                if m:
                    i += m.end()
            start = i
            continue
        i += 1
    text = inner[start:]
    pieces.append(text if triple else _unescape(text))
    return pieces


def _format_pieces(text: str, args: list[str]) -> list[Piece]:
    """A ``String.format`` text as pieces: each ``%s``-style spec is a slot filled by the next argument."""
    pieces: list[Piece] = []
    pos, k = 0, 0
    for m in _FORMAT_SPEC.finditer(text):
        pieces.append(text[pos : m.start()])
        if m.group(1) == "%":
            pieces.append("%")
        elif m.group(1) == "n":
            pieces.append("\n")
        else:
            pieces.append((args[k].strip() if k < len(args) else "",))
            k += 1
        pos = m.end()
    pieces.append(text[pos:])
    return pieces


def _whole_literal(t: str) -> re.Match | None:
    """The match of ``t`` as one string literal (with an optional ``s``/``f``/``raw`` prefix and
    ``.stripMargin``/``.trim``), or None."""
    m = _LITERAL.match(t)
    if m is None:
        return None
    start = len(m.group(1) or "")
    return m if _skip_string(t, start, m.group(1) in ("s", "f")) == start + len(m.group(2)) else None


def _message_pieces(expr: str) -> list[Piece]:
    """A message expression (``"a " + x + s"b $y"``, ``"..%s..".format(z)``) as pieces."""
    pieces: list[Piece] = []
    for term in _split_top(expr, "+"):
        t = term.strip()
        if not t:
            continue
        m = _whole_literal(t)
        if m:
            pieces.extend(_literal_pieces(m.group(1), m.group(2)))
            continue
        m = _LITERAL_FORMAT.match(t) or _STRING_FORMAT.match(t)
        if m:
            open_ = m.end() - 1
            args = _split_top(t[open_ + 1 : _skip_group(t, open_, "(", ")") - 1], ",")
            if m.re is _STRING_FORMAT:
                text, args = _message_pieces(args[0]), args[1:]
            else:
                text = _literal_pieces(m.group(1), m.group(2))
            if all(isinstance(p, str) for p in text):
                pieces.extend(_format_pieces("".join(text), args))  # type: ignore[arg-type]
                continue
        if t.startswith("(") and _skip_group(t, 0, "(", ")") == len(t):
            pieces.extend(_message_pieces(t[1:-1]))
            continue
        pieces.append((t,))
    return pieces


def _slf4j(pieces: list[Piece], args: list[str]) -> list[Piece]:
    """Pieces with every ``{}`` of the literal text turned into a slot filled by the next argument."""
    out: list[Piece] = []
    k = 0
    for p in pieces:
        if isinstance(p, tuple):
            out.append(p)
            continue
        bits = p.split("{}")
        for j, b in enumerate(bits):
            if j:
                arg = args[k].strip() if k < len(args) else ""
                lit = _whole_literal(arg)
                inline = _literal_pieces(lit.group(1), lit.group(2)) if lit and not lit.group(3) else None
                if inline is not None and all(isinstance(x, str) for x in inline):
                    out.extend(inline)  # a literal argument is part of the text
                else:
                    out.append((arg,))
                k += 1
            out.append(b)
    return out


def _blank(code: str) -> str:
    """``code`` with comments and string literals blanked (offsets and newlines kept)."""
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)


def _package(code: str) -> str:
    return ".".join(m.group(1) for m in re.finditer(r"(?m)^\s*package\s+([\w.]+)\s*;?\s*$", code))


def _resolve_class(ref: str, code: str, pkg: str, own: str, java: bool = True) -> str:
    """A class reference as written in a file (``Foo``, ``Outer.Inner``) -> its JVM name."""
    head, _, rest = ref.partition(".")
    m = re.search(r"(?m)^\s*import\s+([\w.]+)\." + re.escape(head) + r"\s*;?\s*$", code)
    base = f"{m.group(1)}.{head}" if m else (f"{pkg}.{head}" if pkg else head)
    if (
        java
        and not m
        and head != own
        and re.search(r"\b(class|interface|enum|record)\s+" + re.escape(head) + r"\b", code)
    ):
        base = f"{pkg}.{own}${head}" if pkg else f"{own}${head}"
    if re.fullmatch(r"[a-z][\w.]*\.[A-Z]\w*(\.[A-Z]\w*)*", ref):  # fully qualified
        parts = ref.split(".")
        k = next(i for i, p in enumerate(parts) if p[:1].isupper())
        return ".".join(parts[:k + 1]) + "".join("$" + p for p in parts[k + 1 :])  # fmt: skip
    return base + "".join("$" + p for p in rest.split(".") if p)


def _logger_decls(code: str, blank: str, pkg: str, own: str) -> list[tuple[int, str, str]]:
    """(offset, variable, logger name) of every logger a file makes."""
    out = []
    for m in _LOGGER_DECL.finditer(code):
        if blank[m.start(1)] == " ":  # in a comment or string
            continue
        arg = m.group(2)
        if arg.startswith('"'):
            name = arg[1:-1]
        elif arg.startswith("classOf["):
            name = _resolve_class(arg[8 : arg.index("]")], code, pkg, own, java=False)
        elif ".class" in arg:
            name = _resolve_class(arg[: arg.index(".class")], code, pkg, own)
        else:
            name = ""  # getClass(): the file's own class, found at the call
        out.append((m.start(), m.group(1), name))
    return out


def _scala_scopes(blank: str, pkg: str) -> list[tuple[int, int, str, str, str]]:
    """(body start, body end, JVM name, header text, kind) of every class, object and trait of a Scala file."""
    braces = [(m.start(), m.group(0)) for m in re.finditer(r"[{}]", blank)]
    opens: list[int] = []
    match: dict[int, int] = {}
    for pos, c in braces:
        if c == "{":
            opens.append(pos)
        elif opens:
            match[opens.pop()] = pos
    scopes: list[tuple[int, int, str, str, str]] = []
    open_positions = sorted(match)
    for m in _SCALA_DECL.finditer(blank):
        k = bisect.bisect_left(open_positions, m.end())
        if k == len(open_positions):
            continue
        start = open_positions[k]
        nxt = _SCALA_DECL.search(blank, m.end(), start)
        if nxt:  # a declaration without a body of its own
            continue
        header = blank[m.start() : start]
        scopes.append((start, match[start], m.group(2), header, m.group(1)))
    # JVM names: nested declarations are Outer$Inner, objects end in $
    named = []
    for s in scopes:
        chain = [o for o in scopes if o[0] < s[0] and s[1] <= o[1]] + [s]
        name = "$".join(c[2] for c in chain) + ("$" if s[4] == "object" else "")
        named.append((s[0], s[1], (f"{pkg}.{name}" if pkg else name), s[3], s[4]))
    return named


def _scala_logger(pos: int, scopes: list[tuple[int, int, str, str, str]], code: str, pkg: str, fallback: str) -> str:
    around = [s for s in scopes if s[0] < pos < s[1]]
    if not around:
        return fallback
    logging = [s for s in around if re.search(r"\b(Logging|KafkaMetricsGroup)\b", s[3])]
    scope = max(logging, key=lambda s: s[0]) if logging else min(around, key=lambda s: s[0])
    m = _LOGGER_NAME.search(code, scope[0], scope[1])
    if m:
        inner = [s for s in around if s[0] > scope[0] and s[0] < m.start()]
        if not inner or all(not (s[0] < m.start() < s[1]) for s in inner):
            return (
                m.group(1)[1:-1]
                if m.group(1).startswith('"')
                else _resolve_class(m.group(2), code, pkg, "", java=False)
            )
    return scope[2]


def _receiver_logger(receiver: str, pos: int, decls, blank: str, code: str, pkg: str, own: str, scala: bool) -> str:
    """The logger of ``receiver.info(...)``: the one the file makes under that name (the nearest before
    ``pos``), else, in Scala, the class of a value declared with a type (``log: UnifiedLog``: a class
    that mixes in ``Logging``); "" when neither is known."""
    named = [d for d in decls if d[1] == receiver]
    before = [d for d in named if d[0] < pos]
    decl = before[-1] if before else (named[0] if named else None)
    if decl and decl[2]:
        return decl[2]
    if decl is None and scala:
        typed = re.search(r"(?<![\w$])" + re.escape(receiver) + r"\s*:\s*([A-Z][\w.]*)", blank)
        if typed and not typed.group(1).endswith(("Logger", "Log4jLogger")):
            return _resolve_class(typed.group(1), code, pkg, own, java=False)
    return ""


def parse_source(code: str, path: str) -> list[Found]:
    """Every log call of one Java or Scala source file whose message has literal words."""
    scala = path.endswith(".scala")
    blank = _blank(code)
    pkg = _package(blank)
    own = Path(path).stem
    own_class = f"{pkg}.{own}" if pkg else own
    decls = _logger_decls(code, blank, pkg, own)
    scopes = _scala_scopes(blank, pkg) if scala else []
    found = []
    for m in (_SCALA_CALL if scala else _JAVA_CALL).finditer(blank):
        if scala and m.group(1):
            receiver, level = "", m.group(1)
            if re.search(r"\bdef\s*$", blank[max(0, m.start() - 12) : m.start()]):
                continue
        else:
            receiver, level = (m.group(2), m.group(3)) if scala else (m.group(1), m.group(2))
            receiver = receiver.removeprefix("this.")
        open_ = m.end() - 1
        end = _skip_group(code, open_, "(", ")")
        args = _split_top(code[open_ + 1 : end - 1], ",")
        if not args or not args[0].strip():
            continue
        pieces = _message_pieces(args[0])
        if not scala or receiver:
            pieces = _slf4j(pieces, args[1:])
        template, types, exprs = _template(pieces)
        if not re.search(r"[A-Za-z]{2}", template):
            continue
        if receiver in _KNOWN_RECEIVERS:
            logger = _KNOWN_RECEIVERS[receiver]
        elif receiver:
            logger = _receiver_logger(receiver, m.start(), decls, blank, code, pkg, own, scala)
            if not logger:
                logger = _scala_logger(m.start(), scopes, code, pkg, own_class) if scala else own_class
        else:
            logger = _scala_logger(m.start(), scopes, code, pkg, own_class) if scala else own_class
        line = code.count("\n", 0, m.start()) + 1
        found.append(Found(logger, "error" if level == "fatal" else level, template, types, exprs, line))
    return found


# ---------------------------------------------------------------------------------------------
# The catalogue


def extract(
    clone: Path | str,
    tags: list[str] | None = None,
    trunk: bool = True,
    progress=None,
    jars: dict[str, list[Path]] | None = None,
) -> Catalogue:
    """The catalogue of a clone: every log statement of every release in ``tags`` (default:
    :func:`release_tags`) and, with ``trunk``, of HEAD (labelled :data:`TRUNK`); then of the
    releases in ``jars`` (release -> its jar files, read by :mod:`kitlib.formats.logs.classfiles`),
    which come after trunk, oldest first. A statement found in both keeps what the source says of
    it (slot types and names) and gains the jars' releases."""  # fmt: skip
    t0 = time.monotonic()
    revs = [(t, t) for t in (release_tags(clone) if tags is None else tags)]
    if trunk:
        revs.append((TRUNK, "HEAD"))
    files: list[list[tuple[str, str]]] = []
    for _, rev in revs:
        files.append(source_files(clone, rev))
    # a blob's statements depend on its text and its file name (a Java file's class)
    paths: dict[str, set[str]] = {}
    for fs in files:
        for blob, path in fs:
            paths.setdefault(blob, set()).add(Path(path).name)
    parsed: dict[tuple[str, str], list[Found]] = {}
    n_bytes = 0
    for blob, data in read_blobs(clone, sorted(paths)):
        n_bytes += len(data)
        text = data.decode("utf-8", "replace") if _ANY_CALL.search(data) else ""
        for name in paths[blob]:
            parsed[(blob, name)] = parse_source(text, name) if text else []
    if progress:
        progress(f"{len(revs)} revisions, {len(paths)} distinct files ({n_bytes / 1e6:.0f} MB) parsed")
    entries: dict[tuple[str, str, str], dict] = {}
    for r, fs in enumerate(files):
        for blob, path in fs:
            for f in parsed[(blob, Path(path).name)]:
                key = (template_id(f.template), f.logger, f.level)
                e = entries.get(key)
                if e is None:
                    e = entries[key] = {"releases": set(), "found": f, "path": path, "rev": r}
                e["releases"].add(r)
                if r >= e["rev"]:
                    e["found"], e["path"], e["rev"] = f, path, r
    labels = [label for label, _ in revs]
    statements = []
    for (tid, logger, level), e in entries.items():
        f = e["found"]
        rels = tuple(labels[i] for i in sorted(e["releases"]))
        statements.append(Statement(tid, logger, level, f.template, f.types, f.exprs, rels, e["path"]))
    statements.sort(key=lambda s: (s.logger, s.template, s.level))
    notes: dict[str, int | str | dict] = {"distinct_files": len(paths), "bytes_read": n_bytes}
    if trunk:
        notes["trunk"] = _git(clone, "log", "-1", "--format=%H %cs", "HEAD").strip()
    cat = Catalogue(labels, statements, notes)
    if jars:
        cat = extend(cat, jars, progress)
    if progress:
        progress(f"catalogue built in {time.monotonic() - t0:.0f} s")
    return cat


def extend(cat: Catalogue, jars: dict[str, list[Path]], progress=None) -> Catalogue:
    """``cat`` with the releases of ``jars`` (release -> its jar files, read by
    :mod:`kitlib.formats.logs.classfiles`) added after its own, oldest first. A statement ``cat``
    holds keeps its template, slot types, names and file, and gains the releases whose jars hold it;
    the others are new, filed under their newest class file."""
    from kitlib.formats.logs import classfiles

    labels = list(cat.releases)
    entries: dict[tuple[str, str, str], dict] = {
        (s.id, s.logger, s.level): {"s": s, "new": []} for s in cat.statements
    }  # fmt: skip
    for label in sorted(jars, key=lambda v: (_version(v), v)):
        labels.append(label)
        for jar in jars[label]:
            for f, cls in classfiles.jar_statements(jar):
                key = (template_id(f.template), f.logger, f.level)
                e = entries.setdefault(key, {"s": None, "new": []})
                if label not in e["new"]:
                    e["new"].append(label)
                if e["s"] is None or e["s"].releases == ():
                    e["s"] = Statement(key[0], f.logger, f.level, f.template, f.types, f.exprs, (),
                                       f"{Path(jar).name}:{cls}")  # fmt: skip
        if progress:
            progress(f"{label}: {len(jars[label])} jars read")
    statements = []
    for e in entries.values():
        s = e["s"]
        statements.append(Statement(s.id, s.logger, s.level, s.template, s.types, s.names, s.releases + tuple(e["new"]),
                                    s.source))  # fmt: skip
    statements.sort(key=lambda s: (s.logger, s.template, s.level))
    notes = dict(cat.notes)
    notes["class_files"] = {v: sorted(Path(j).name for j in js) for v, js in jars.items()}  # which jars were read
    return Catalogue(labels, statements, notes)


def _ranges(idx: list[int]) -> str:
    out, i = [], 0
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
            j += 1
        out.append(str(idx[i]) if i == j else f"{idx[i]}-{idx[j]}")
        i = j + 1
    return ",".join(out)


def _unranges(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def save(cat: Catalogue, out: Path | str) -> None:
    """Write a catalogue as gzipped JSON: releases listed once, each statement's releases as index ranges."""
    pos = {r: i for i, r in enumerate(cat.releases)}
    rows = [[s.id, s.logger, s.level, s.template, list(s.types), list(s.names),
             _ranges([pos[r] for r in s.releases]), s.source] for s in cat.statements]  # fmt: skip
    doc = {"format": 1, "columns": ["id", "logger", "level", "template", "types", "names", "releases", "source"],
           "releases": cat.releases, "notes": cat.notes, "statements": rows}  # fmt: skip
    with gzip.GzipFile(out, "wb", mtime=0, compresslevel=9) as f:
        f.write(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode())


def load(path: Path | str | None = None) -> Catalogue:
    """Read a catalogue written by :func:`save` (default: the one that ships with the kit)."""
    p = Path(path) if path else DATA_FILE
    if not p.exists():
        raise FileNotFoundError(f"no statements catalogue at {p} (make statements KAFKA_CLONE=DIR builds it)")
    return _load(str(p), p.stat().st_mtime_ns)


@cache
def _load(path: str, _mtime: int) -> Catalogue:
    with gzip.open(path, "rb") as f:
        doc = json.loads(f.read())
    rels = doc["releases"]
    statements = [Statement(i, lg, lv, t, tuple(ty), tuple(nm), tuple(rels[k] for k in _unranges(r)), src)
                  for i, lg, lv, t, ty, nm, r, src in doc["statements"]]  # fmt: skip
    return Catalogue(rels, statements, doc.get("notes", {}))


def select(statements: Iterable[Statement], logger: str | None = None, grep: str | None = None) -> list[Statement]:
    """The statements whose logger contains ``logger`` and whose template contains ``grep`` (both
    case-insensitive)."""
    lg, gr = (logger or "").lower(), (grep or "").lower()
    return [s for s in statements if lg in s.logger.lower() and gr in s.template.lower()]


def counts(cat: Catalogue) -> dict:
    """How many statements, distinct templates and statements per level a catalogue holds."""
    by_level = {lv: sum(s.level == lv for s in cat.statements) for lv in LEVELS}
    return {"releases": len(cat.releases), "statements": len(cat.statements),
            "templates": len({s.id for s in cat.statements}), "by_level": by_level}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kitlib.formats.logs.statements", description=__doc__.split("\n")[0])
    ap.add_argument("clone", nargs="?", help="a git clone of Apache Kafka (bare or not)")
    ap.add_argument("--base", metavar="CATALOGUE",
                    help="instead of a clone, start from this catalogue and add the --jars releases to it")  # fmt: skip
    ap.add_argument("--out", default=str(DATA_FILE), help="where to write the catalogue (default: %(default)s)")
    ap.add_argument("--tag", action="append", help="read only these tags (repeatable; default: every release)")
    ap.add_argument("--no-trunk", action="store_true", help="leave the clone's HEAD out")
    ap.add_argument(
        "--jars",
        metavar="VERSION",
        action="append",
        default=[],
        help="also read this release's jars (class files; repeatable), for releases the clone lacks",
    )
    ap.add_argument("--maven-repo", default=str(Path.home() / ".m2" / "repository"),
                    help="the Maven repository folder holding those jars (default: %(default)s)")  # fmt: skip
    args = ap.parse_args(argv)
    jars: dict[str, list[Path]] = {}
    if args.jars:
        from kitlib.formats.logs import classfiles

        for v in args.jars:
            jars[v], missing = classfiles.release_jars(args.maven_repo, v)
            if not jars[v] or "kafka_2.13" in missing or "kafka-clients" in missing:
                print(f"the jars of Kafka {v} are not in {args.maven_repo} (missing: {', '.join(missing)})",
                      file=sys.stderr)  # fmt: skip
                return 2
            if missing:
                print(f"Kafka {v}: no {', '.join(missing)} in {args.maven_repo}; read without them", file=sys.stderr)
    if bool(args.clone) == bool(args.base):
        ap.error("give a clone or --base CATALOGUE")

    def say(message: str) -> None:
        print(message, file=sys.stderr)

    cat = (
        extend(load(args.base), jars, say) if args.base else extract(args.clone, args.tag, not args.no_trunk, say, jars)
    )
    save(cat, args.out)
    c = counts(cat)
    print(f"{c['releases']} revisions ({cat.releases[0]} .. {cat.releases[-1]}), {c['statements']} statements, "
          f"{c['templates']} distinct templates, by level {c['by_level']} "
          f"-> {args.out} ({Path(args.out).stat().st_size / 1e6:.2f} MB)", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
