"""The log calls in one Java or Scala source file of Apache Kafka (:func:`parse_source`): which
logger logs which message template at which level, for the catalogue of
:mod:`kitlib.formats.logs.statements`.

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

A template is the message's literal text with ``{}`` where a value goes: SLF4J's ``{}``, Scala's
``$x``/``${...}``, ``%s``-style slots of ``.format(...)`` and every non-literal term of a ``+``
concatenation; each slot is typed by :mod:`kitlib.formats.logs.slots`. Calls whose message has no
literal words (``info(msg)``) are left out.

Example:
    >>> found = parse_source('log.warn("Fenced broker {} at epoch {}", brokerId, epoch);', "Foo.java")
    >>> [(f.level, f.template, f.types) for f in found]
    [('warn', 'Fenced broker {} at epoch {}', ('broker_id', 'epoch'))]
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from kitlib.formats.logs.slots import Found, Piece, _template

_LEVEL = r"(trace|debug|info|warn|error|fatal)"
_JAVA_CALL = re.compile(r"(?<![\w$])((?:this\.)?\w*(?:[lL]og|LOG|[lL]ogger|LOGGER))\s*\.\s*" + _LEVEL + r"\s*\(")
_SCALA_CALL = re.compile(
    r"(?<![\w$.])" + _LEVEL + r"\s*\(|(?<![\w$])(\w*(?:[lL]og|LOG|[lL]ogger|LOGGER))\s*\.\s*" + _LEVEL + r"\s*\("
)
ANY_CALL = re.compile(rb"(?:trace|debug|info|warn|error|fatal)\s*\(")
_LOGGER_DECL = re.compile(
    r"\b(\w+)\s*(?::\s*[\w.\[\]]+\s*)?=\s*[^;={}]{0,160}?\b(?:getLogger|logger|Logger)\s*\(\s*"
    r"(\"[^\"]*\"|classOf\[[\w.]+\](?:\.getName)?|[\w.]+\.class(?:\.getName\(\))?|(?:this\.)?getClass(?:\(\))?(?:\.getName(?:\(\))?)?)\s*\)"
)
_LOGGER_NAME = re.compile(r"\bloggerName\b[^=\n]*=\s*(\"[^\"]*\"|classOf\[([\w.]+)\]\.getName)")
_KNOWN_RECEIVERS = {"stateChangeLogger": "state.change.logger", "requestLogger": "kafka.request.logger"}
_SCALA_DECL = re.compile(r"\b(class|object|trait)\s+(\w+)")
_COMMENT_OR_STRING = re.compile(r'"""[\s\S]*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])\'|//[^\n]*|/\*[\s\S]*?\*/')
_FORMAT_SPEC = re.compile(r"%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?([sdfxXbcoeEgGn%])")


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
