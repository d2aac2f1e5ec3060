"""Kafka's log statements read from its released class files (the 4.x releases, whose source the
catalogue's git clone does not reach): a second input of :mod:`kitlib.formats.logs.statements`.

A build tool, not run by the kit: :func:`jar_statements` opens a release jar (the ones Maven
keeps in its local repository), reads each class file's constant pool and the byte code of every
method, and finds the log calls in it:

- Java: ``invokeinterface org/slf4j/Logger.info(String, ...)`` (any level). The message is the
  first string the call's arguments build after the logger is loaded: a constant (``ldc``, SLF4J's
  ``{}`` kept), a ``String.format`` of a constant (its ``%s``-style specs become ``{}``) or a
  string concatenation (``invokedynamic makeConcatWithConstants``, whose recipe holds the
  literal text, each ``\\1`` a value and each ``\\2`` a constant of the call site). The logger is
  the one stored into the field the call reads (``LoggerFactory.getLogger(X.class)``,
  ``logContext.logger(X.class)``, ``getLogger("name")``, ``getClass()``), else the top-level class.
- Scala (``kafka_2.13``): the ``Logging`` trait's ``info(=> String)`` and the others take the
  message as a function; its body is a lambda method of the same class (``$anonfun$...``) that
  returns a constant or a concatenation. The logger is the class whose ``info`` is called (the
  calling class for its own calls: an object's name ends in ``$``), ``state.change.logger`` for
  ``StateChangeLogger``.

The templates come out as the source reader makes them (literal text, each value ``{}``), so a
sentence unchanged since the last release read from git keeps its id. Slots are typed from the
words around them and, for a concatenation, the value's class (``TopicPartition``, a
``Throwable``). Calls whose message is not built in the call (a variable, a helper's result) are
left out, as the source reader leaves out messages without literal words.
"""

from __future__ import annotations

import re
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kitlib.formats.logs.slots import Found, _template, slot_type

# the release jars read, the modules of the source the git reader covers (Maven artifact ids);
# MirrorMaker's 4.4.0 jars were not available when the catalogue was built, so MirrorMaker is left out
ARTIFACTS = ("kafka-clients", "kafka_2.13", "kafka-server", "kafka-server-common", "kafka-metadata", "kafka-raft",
             "kafka-storage", "kafka-storage-api", "kafka-group-coordinator", "kafka-group-coordinator-api",
             "kafka-coordinator-common", "kafka-share-coordinator", "kafka-transaction-coordinator",
             "connect-runtime", "connect-api", "connect-json", "connect-transforms", "kafka-streams")  # fmt: skip
_LEVELS = {"trace", "debug", "info", "warn", "error", "fatal"}
_KNOWN_LOGGER_CLASSES = {"kafka.logger.StateChangeLogger": "state.change.logger",
                         "kafka.controller.StateChangeLogger": "state.change.logger"}  # fmt: skip
# classes whose log methods take the whole message as a string, and the logger they log to
_STRING_LOGGERS = {"org/slf4j/Logger": "", "org/apache/kafka/logger/StateChangeLogger": "state.change.logger"}
_FORMAT_SPEC = re.compile(r"%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?([sdfxXbcoeEgGn%])")

# operand bytes after the opcode (tableswitch, lookupswitch and wide are handled apart)
_OPERANDS = bytearray(256)
for _op in (0x10, 0x12, 0x15, 0x16, 0x17, 0x18, 0x19, 0x36, 0x37, 0x38, 0x39, 0x3A, 0xA9, 0xBC):
    _OPERANDS[_op] = 1
for _op in (0x11, 0x13, 0x14, 0x84, *range(0x99, 0xA9), 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xBB, 0xBD,
            0xC0, 0xC1, 0xC6, 0xC7):  # fmt: skip
    _OPERANDS[_op] = 2
_OPERANDS[0xC5] = 3  # multianewarray
for _op in (0xB9, 0xBA, 0xC8, 0xC9):  # invokeinterface, invokedynamic, goto_w, jsr_w
    _OPERANDS[_op] = 4

_LDC = (0x12, 0x13)
_FIELD_GET = (0xB2, 0xB4)
_FIELD_PUT = (0xB3, 0xB5)
_INVOKE = (0xB6, 0xB7, 0xB8, 0xB9)
_INDY = 0xBA
_ARETURN = 0xB0
# instructions that end a statement: stores, pop, returns, throw, jumps, field puts
_BOUNDARY = {*range(0x36, 0x4F), 0x57, 0x58, *range(0xAC, 0xB2), 0xBF, *range(0x99, 0xA9), 0xC6, 0xC7, 0xB3, 0xB5}


@dataclass
class ClassFile:
    name: str  # JVM internal name, a/b/C$D
    pool: list
    methods: list[tuple[str, str, bytes]]  # name, descriptor, code
    bootstrap: list[tuple[int, list[int]]]  # method handle index, static argument indices


def parse_class(data: bytes) -> ClassFile:
    """The parts of a class file the reader needs: its name, constant pool, methods' code and
    bootstrap methods."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    n = struct.unpack_from(">H", data, 8)[0]
    pool: list = [None] * n
    i, pos = 1, 10
    while i < n:
        tag = data[pos]
        if tag == 1:
            size = struct.unpack_from(">H", data, pos + 1)[0]
            pool[i] = ("utf8", data[pos + 3 : pos + 3 + size].decode("utf-8", "replace"))  # modified UTF-8: near enough
            pos += 3 + size
        elif tag in (3, 4):
            pool[i] = ("num", None)
            pos += 5
        elif tag in (5, 6):
            pool[i] = ("num", None)
            pos += 9
            i += 1
        elif tag in (7, 8, 16, 19, 20):
            pool[i] = ({7: "class", 8: "string", 16: "mtype", 19: "module", 20: "package"}[tag],
                       struct.unpack_from(">H", data, pos + 1)[0])  # fmt: skip
            pos += 3
        elif tag == 15:
            pool[i] = ("mhandle", struct.unpack_from(">H", data, pos + 2)[0])
            pos += 4
        elif tag in (9, 10, 11, 12, 17, 18):
            a, b = struct.unpack_from(">HH", data, pos + 1)
            pool[i] = ({9: "field", 10: "method", 11: "imethod", 12: "nat", 17: "dynamic", 18: "indy"}[tag], a, b)
            pos += 5
        else:
            raise ValueError(f"unknown constant tag {tag}")
        i += 1
    this = struct.unpack_from(">H", data, pos + 2)[0]
    name = pool[pool[this][1]][1]
    pos += 6
    n_if = struct.unpack_from(">H", data, pos)[0]
    pos += 2 + 2 * n_if

    def attributes(p: int) -> tuple[int, list[tuple[str, bytes]]]:
        count = struct.unpack_from(">H", data, p)[0]
        p += 2
        out = []
        for _ in range(count):
            ni, size = struct.unpack_from(">HI", data, p)
            out.append((pool[ni][1], data[p + 6 : p + 6 + size]))
            p += 6 + size
        return p, out

    n_fields = struct.unpack_from(">H", data, pos)[0]
    pos += 2
    for _ in range(n_fields):
        pos, _attrs = attributes(pos + 6)
    n_methods = struct.unpack_from(">H", data, pos)[0]
    pos += 2
    methods = []
    for _ in range(n_methods):
        ni, di = struct.unpack_from(">HH", data, pos + 2)
        pos, attrs = attributes(pos + 6)
        for an, body in attrs:
            if an == "Code":
                size = struct.unpack_from(">I", body, 4)[0]
                methods.append((pool[ni][1], pool[di][1], body[8 : 8 + size]))
    pos, attrs = attributes(pos)
    bootstrap = []
    for an, body in attrs:
        if an == "BootstrapMethods":
            count = struct.unpack_from(">H", body, 0)[0]
            p = 2
            for _ in range(count):
                ref, nargs = struct.unpack_from(">HH", body, p)
                bootstrap.append((ref, list(struct.unpack_from(f">{nargs}H", body, p + 4))))
                p += 4 + 2 * nargs
    return ClassFile(name, pool, methods, bootstrap)


def instructions(code: bytes) -> Iterator[tuple[int, int]]:
    """(opcode, constant-pool or local operand; -1 if none) of each instruction of a method."""
    pos, n = 0, len(code)
    while pos < n:
        op = code[pos]
        if op == 0xAA:  # tableswitch
            p = (pos + 4) & ~3
            low, high = struct.unpack_from(">ii", code, p + 4)
            pos = p + 12 + 4 * (high - low + 1)
            yield op, -1
            continue
        if op == 0xAB:  # lookupswitch
            p = (pos + 4) & ~3
            pairs = struct.unpack_from(">i", code, p + 4)[0]
            pos = p + 8 + 8 * pairs
            yield op, -1
            continue
        if op == 0xC4:  # wide
            inner = code[pos + 1]
            yield inner, struct.unpack_from(">H", code, pos + 2)[0]
            pos += 6 if inner == 0x84 else 4
            continue
        size = _OPERANDS[op]
        if op == 0x12:
            arg = code[pos + 1]
        elif size >= 2 and op not in range(0x99, 0xA9) and op not in (0xA7, 0xC6, 0xC7, 0xC8, 0xC9, 0x11, 0x84):
            arg = struct.unpack_from(">H", code, pos + 1)[0]
        else:
            arg = -1
        yield op, arg
        pos += 1 + size


class _Reader:
    """One class file's log calls."""

    def __init__(self, cf: ClassFile, fields: dict[tuple[str, str], str]):
        self.cf, self.pool, self.fields = cf, cf.pool, fields
        self.methods = {(m[0], m[1]): list(instructions(m[2])) for m in cf.methods}
        self.own = self.loggerName() or cf.name.replace("/", ".")

    def loggerName(self) -> str:
        """A Scala class's ``loggerName`` override: a constant or ``classOf[X].getName``."""
        for (name, desc), code in self.methods.items():
            if name.startswith("loggerName") and desc == "()Ljava/lang/String;" and code and code[0][0] in _LDC:
                c = self.constant(code[0][1]) or ""
                if c.startswith("class:") and len(code) > 1 and code[1][0] in _INVOKE:
                    return c[6:].replace("/", ".")
                if c and not c.startswith("class:"):
                    return c
        return ""

    def utf(self, i: int) -> str:
        return self.pool[i][1]

    def ref(self, i: int) -> tuple[str, str, str]:
        """(owner, name, descriptor) of a field or method reference."""
        _, ci, nat = self.pool[i]
        _, ni, di = self.pool[nat]
        return self.utf(self.pool[ci][1]), self.utf(ni), self.utf(di)

    def indy(self, i: int) -> tuple[tuple[int, list[int]], str, str]:
        _, bi, nat = self.pool[i]
        _, ni, di = self.pool[nat]
        return self.cf.bootstrap[bi], self.utf(ni), self.utf(di)

    def constant(self, i: int) -> str | None:
        entry = self.pool[i]
        if entry and entry[0] == "string":
            return self.utf(entry[1])
        if entry and entry[0] == "class":
            return "class:" + self.utf(entry[1])
        return None

    def pieces(self, op: int, arg: int) -> list | None:
        """The pieces of the string an instruction makes: a constant, a concatenation; else None."""
        if op in _LDC:
            text = self.constant(arg)
            return [text] if text is not None and not text.startswith("class:") else None
        if op == _INDY:
            (bsm, bargs), name, desc = self.indy(arg)
            if name != "makeConcatWithConstants" or not bargs:
                return None
            recipe = self.constant(bargs[0]) or ""
            consts = [self.constant(b) or "" for b in bargs[1:]]
            types = re.findall(r"\[*(?:L[^;]+;|[ZBCSIJFD])", desc[1 : desc.index(")")])
            out: list = []
            k = c = 0
            for ch in recipe:
                if ch == "\x01":
                    t = types[k] if k < len(types) else ""
                    out.append((t.rsplit("/", 1)[-1].rstrip(";").lstrip("L[").replace("$", "."),))
                    k += 1
                elif ch == "\x02":
                    out.append(consts[c] if c < len(consts) else "")
                    c += 1
                else:
                    out.append(ch)
            return out
        return None

    def message(self, code: list[tuple[int, int]], start: int, end: int) -> list | None:
        """The message built first between ``start`` and ``end`` (a call's arguments)."""
        for j in range(start, end):
            op, arg = code[j]
            got = self.pieces(op, arg)
            if got is None:
                continue
            if len(got) == 1 and isinstance(got[0], str) and "{}" not in got[0] and _FORMAT_SPEC.search(got[0]):
                for op2, arg2 in code[j + 1 : end]:  # String.format("... %s", ...) / "...".formatted(...)
                    if op2 in _INVOKE:
                        owner, name, _ = self.ref(arg2)
                        if name in ("format", "formatted", "format$extension"):
                            return _format(got[0])
            return got
        return None

    def lambda_message(self, target: str) -> list | None:
        """The string a ``() => String`` lambda's method returns."""
        for (name, _desc), code in self.methods.items():
            if name != target:
                continue
            last = None
            for j, (op, _arg) in enumerate(code):
                if op == _ARETURN:
                    return last
                got = self.message(code, j, j + 1) if op in _LDC or op == _INDY else None
                if got is not None:
                    last = self.message(code, j, len(code)) if op in _LDC else got
            return last
        return None

    def logger_of_receiver(self, code: list[tuple[int, int]], k: int) -> tuple[int, str]:
        """(index, logger) of the instruction that loads the logger a call at ``k`` uses."""
        top = self.cf.name.split("$", 1)[0].replace("/", ".")
        for j in range(k - 1, max(-1, k - 400), -1):
            op, arg = code[j]
            if op in _FIELD_GET:
                owner, name, desc = self.ref(arg)
                if desc == "Lorg/slf4j/Logger;":
                    return j, self.fields.get((owner, name)) or owner.split("$", 1)[0].replace("/", ".")
                if desc[1:-1] in _STRING_LOGGERS:
                    return j, _STRING_LOGGERS[desc[1:-1]]
            elif op in _INVOKE:
                owner, name, desc = self.ref(arg)
                returns = desc[desc.index(")") + 2 : -1] if desc.endswith(";") else ""
                if returns in _STRING_LOGGERS and returns != "org/slf4j/Logger":  # stateChangeLogger()
                    return j, _STRING_LOGGERS[returns]
                if desc.endswith(")Lorg/slf4j/Logger;"):
                    made = _made_logger(self, code, j, self.cf.name)
                    if made:  # LoggerFactory.getLogger(X.class).info(...)
                        return j, made
                    if owner.startswith("com/typesafe/scalalogging/"):  # scala-logging's ``underlying``
                        return j, self.cf.name.replace("/", ".")
                    return j, owner.split("$", 1)[0].replace("/", ".")
        # a local variable or parameter: the message starts after the statement before
        for j in range(k - 1, max(-1, k - 400), -1):
            if code[j][0] in _BOUNDARY:
                return j, top
        return max(0, k - 400) - 1, top

    def calls(self) -> Iterator[Found]:
        me = self.own
        for (mname, mdesc), code in self.methods.items():
            if mname in _LEVELS and "scala/Function0" in mdesc:  # the Logging trait's forwarders
                continue
            for k, (op, arg) in enumerate(code):
                if op not in _INVOKE:
                    continue
                owner, name, desc = self.ref(arg)
                level = name.rstrip("$")
                if level not in _LEVELS:
                    continue
                if owner in _STRING_LOGGERS and desc.startswith("(Ljava/lang/String;"):
                    j, logger = self.logger_of_receiver(code, k)
                    logger = _STRING_LOGGERS[owner] or logger
                    if desc.startswith("(Ljava/lang/String;)"):  # the message alone: the last string made
                        made = [i for i in range(j + 1, k) if self.pieces(*code[i]) is not None]
                        pieces = self.message(code, made[-1], k) if made else None
                    else:  # a template and its arguments: the first string made
                        pieces = self.message(code, j + 1, k)
                elif desc.startswith(("(Lscala/Function0;", "(Lkafka/utils/Logging;Lscala/Function0;")):
                    n_fun = desc[: desc.index(")")].count("Lscala/Function0;")
                    seen = []
                    for j in range(k - 1, max(-1, k - 60), -1):
                        op2, arg2 = code[j]
                        if op2 == _INDY:
                            (bsm, bargs), iname, idesc = self.indy(arg2)
                            if idesc.endswith(")Lscala/Function0;") and len(bargs) >= 2:
                                handle = self.pool[bargs[1]]
                                if handle and handle[0] == "mhandle":
                                    seen.append(self.ref(handle[1]))
                                    if len(seen) == n_fun:
                                        break
                    if len(seen) < n_fun or seen[-1][0] != self.cf.name:
                        continue
                    pieces = self.lambda_message(seen[-1][1])
                    target = owner.replace("/", ".")
                    if owner in ("kafka/utils/Logging",) or owner == self.cf.name or op == 0xB8:
                        logger = me
                    else:
                        logger = _KNOWN_LOGGER_CLASSES.get(target, target)
                else:
                    continue
                if not pieces:
                    continue
                if owner == "org/slf4j/Logger":
                    pieces = _slf4j_slots(pieces)
                template, types, exprs = _template(_typed(pieces))
                if not re.search(r"[A-Za-z]{2}", template):
                    continue
                logger = _KNOWN_LOGGER_CLASSES.get(logger, logger)
                yield Found(logger, "error" if level == "fatal" else level, template, types, exprs)


def _format(text: str) -> list:
    out: list = []
    pos = 0
    for m in _FORMAT_SPEC.finditer(text):
        out.append(text[pos : m.start()])
        out.append("%" if m.group(1) == "%" else "\n" if m.group(1) == "n" else ("",))
        pos = m.end()
    out.append(text[pos:])
    return out


def _slf4j_slots(pieces: list) -> list:
    out: list = []
    for p in pieces:
        if isinstance(p, tuple):
            out.append(p)
            continue
        for j, bit in enumerate(p.split("{}")):
            if j:
                out.append(("",))
            out.append(bit)
    return out


def _typed(pieces: list) -> list:
    """Slots named by their value's class where a concatenation shows it (``TopicPartition``)."""
    out = []
    for p in pieces:
        if isinstance(p, tuple):
            t = p[0]
            out.append((t if t and t not in ("Object", "String", "I", "J", "Z") else "",))
        else:
            out.append(p)
    return out


def _made_logger(r: _Reader, code: list[tuple[int, int]], k: int, here: str) -> str:
    """The logger an instruction at ``k`` makes (``getLogger(X.class)``, ``getLogger("name")``,
    ``logContext.logger(X.class)``, ``getLogger(getClass())``), "" if it makes none."""
    op, arg = code[k]
    if op not in _INVOKE or r.ref(arg)[1] not in ("getLogger", "logger") or k == 0:
        return ""
    op2, arg2 = code[k - 1]
    if op2 in _LDC:
        c = r.constant(arg2)
        if c is not None:
            return c[6:].replace("/", ".") if c.startswith("class:") else c
    if op2 in _INVOKE and r.ref(arg2)[1] == "getClass":
        return here.replace("/", ".")
    if op2 in _INVOKE and r.ref(arg2)[1] == "getName" and k > 1 and code[k - 2][0] in _LDC:
        c = r.constant(code[k - 2][1]) or ""
        return c[6:].replace("/", ".") if c.startswith("class:") else ""
    return ""


def _field_loggers(classes: list[ClassFile]) -> dict[tuple[str, str], str]:
    """(class, field) -> logger name, for every logger field its own class sets to one made right
    there (a field set from a parameter, or to different loggers, is left out)."""
    seen: dict[tuple[str, str], set[str]] = {}
    for cf in classes:
        r = _Reader.__new__(_Reader)
        r.cf, r.pool = cf, cf.pool
        for _m, _d, body in cf.methods:
            code = list(instructions(body))
            for k, (op, arg) in enumerate(code):
                if op not in _FIELD_PUT:
                    continue
                owner, name, desc = r.ref(arg)
                if desc != "Lorg/slf4j/Logger;" or owner != cf.name:
                    continue
                j = k - 1 if k and code[k - 1][0] != 0xC0 else k - 2  # a checkcast between
                made = _made_logger(r, code, j, cf.name) if j > 0 else ""
                seen.setdefault((owner, name), set()).add(made)
    return {key: next(iter(v)) for key, v in seen.items() if len(v) == 1 and "" not in v}


def jar_statements(jar: Path | str) -> list[tuple[Found, str]]:
    """(log call, class file) of every log call of a release jar's classes whose message has
    literal words."""
    classes = []
    with zipfile.ZipFile(jar) as z:
        for info in z.infolist():
            if info.filename.endswith(".class") and not info.filename.startswith("META-INF/"):
                data = z.read(info)
                if b"slf4j/Logger" not in data and b"scala/Function0" not in data:
                    continue
                try:
                    classes.append(parse_class(data))
                except (ValueError, struct.error, IndexError):
                    continue
    fields = _field_loggers(classes)
    out: list[tuple[Found, str]] = []
    for cf in classes:
        try:
            out.extend((f, cf.name + ".class") for f in _Reader(cf, fields).calls())
        except (struct.error, IndexError, KeyError, TypeError):
            continue
    return out


def release_jars(repo: Path | str, version: str) -> tuple[list[Path], list[str]]:
    """The jars of one release in a Maven repository folder (``~/.m2/repository``) and the
    artifacts of :data:`ARTIFACTS` it lacks."""
    found: list[Path] = []
    missing: list[str] = []
    for a in ARTIFACTS:
        jar = Path(repo) / "org" / "apache" / "kafka" / a / version / f"{a}-{version}.jar"
        if jar.is_file():
            found.append(jar)
        else:
            missing.append(a)
    return found, missing


def slot_types_from_words(template: str) -> tuple[str, ...]:
    """Types of a template's slots read from the words around them only."""
    parts = template.split("{}")
    return tuple(slot_type("", parts[i], parts[i + 1]) for i in range(len(parts) - 1))
