"""Kafka's own log statements, read from its source: which class logs which sentence at which level,
and in which releases (the catalogue the kit ships as ``statements.json.gz``).

:func:`extract` reads a git clone of Apache Kafka without checking anything out: for each release
tag it lists the sources of the broker, controller, Connect, Streams and the Java clients
(``git ls-tree``), reads every distinct file content once (``git cat-file --batch``; a file unchanged
between releases is one blob, parsed once) and finds the log calls in it
(:func:`kitlib.formats.logs.logcalls.parse_source`: the logger, level and template of each).

Releases the clone does not reach (Kafka 4.x: the clone at hand ends at trunk of October 2024) are
read from their released jars (``--jars VERSION``, from Maven's local repository) by
:mod:`kitlib.formats.logs.classfiles`, which finds the same log calls in the byte code; they are
listed after :data:`TRUNK`, and a statement both inputs hold keeps what its source says.

A template is the message's literal text with ``{}`` where a value goes; each slot gets a type
from its expression's name or the words around it (:data:`TYPES`). A template's id is a hash of its
text with blanks collapsed, so it keeps its id across releases where only the variables' names
changed.

Example:
    >>> template_id("Shrinking ISR from {} to {}") == template_id("Shrinking ISR  from {} to {}")
    True
"""

from __future__ import annotations

import argparse
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

from kitlib.formats.logs.logcalls import ANY_CALL, parse_source
from kitlib.formats.logs.slots import Found

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
        text = data.decode("utf-8", "replace") if ANY_CALL.search(data) else ""
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
