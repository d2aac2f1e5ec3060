"""The catalogue of :mod:`kitlib.formats.logs.statements` compiled for matching
(:mod:`kitlib.formats.logs.matching`): its distinct templates, their lineage ids, each one's key
word and which logger logs which template.

Compiling takes about a second, so the compiled form is read, in this order, from the copy that
ships with the kit (``patterns.json.gz`` beside the catalogue, written by ``make patterns`` and
by ``make statements``), from the user's cache (:func:`cache_file`), or compiled and written to
that cache. Each copy carries the key it was compiled from (:func:`source_key`: a hash of the
catalogue and of the code that compiles it), and a copy with another key is never used.

Example:
    >>> p = patterns()
    >>> len(p.templates) == len(p.ids) > 1000
    True
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from kitlib.formats.logs import lineage as lin
from kitlib.formats.logs import statements as st

# what splits a template or a record into words
TOKEN = re.compile(r"[^A-Za-z0-9]+")
# the compiled catalogue as shipped (regenerated with the catalogue; never edited by hand)
SHIPPED_FILE = Path(__file__).with_name("patterns.json.gz")


def _key_words(template: str) -> list[str]:
    """The words of a template that a record shows as whole words (not glued to a slot's value)."""
    pieces = template.split("{}")
    out = []
    for i, piece in enumerate(pieces):
        words = TOKEN.split(piece)
        for j, w in enumerate(words):
            if len(w) < 2 or not w[0].isalpha() or (j == 0 and i > 0) or (j == len(words) - 1 and i < len(pieces) - 1):
                continue
            out.append(w)
    return out


@dataclass(frozen=True)
class Patterns:
    """The catalogue compiled for matching: distinct templates (most literal text first), their
    lineage ids, each one's key word (its rarest whole word among all templates), and which
    logger logs which template."""

    templates: list[str]
    ids: list[str]
    vocab: pa.Array  # key words
    key_order: np.ndarray  # template indices sorted by key word
    key_bounds: np.ndarray  # key word k's templates: key_order[key_bounds[k]:key_bounds[k + 1]]
    loggers: dict[str, int]
    pairs: np.ndarray  # sorted logger index * len(templates) + template index


def _compile() -> Patterns:
    """The shipped catalogue compiled for matching (about a second: its lineages and key words)."""
    cat = st.load()
    fam = lin.lineage(cat)
    texts = sorted({s.template for s in cat.statements if _key_words(s.template)},
                   key=lambda t: (-len(t.replace("{}", "")), t))  # fmt: skip
    index = {t: i for i, t in enumerate(texts)}
    ids = [""] * len(texts)
    loggers: dict[str, int] = {}
    pairs = set()
    for s in cat.statements:
        i = index.get(s.template)
        if i is None:
            continue
        ids[i] = ids[i] or fam[s.id]
        for name in sorted({s.logger, s.logger.rstrip("$")}):  # a Scala object logs as 'X$'; some layouts drop the '$'
            pairs.add(loggers.setdefault(name, len(loggers)) * len(texts) + i)
    words = [_key_words(t) for t in texts]
    df: dict[str, int] = {}
    for ws in words:
        for w in set(ws):
            df[w] = df.get(w, 0) + 1
    keys = [min(ws, key=lambda w: (df[w], -len(w), w)) for ws in words]
    vocab = sorted(set(keys))
    kpos = {w: k for k, w in enumerate(vocab)}
    kidx = np.array([kpos[k] for k in keys], np.int64)
    order = np.argsort(kidx, kind="stable")
    bounds = np.searchsorted(kidx[order], np.arange(len(vocab) + 1))
    return Patterns(texts, ids, pa.array(vocab, pa.string()), order, bounds, loggers,
                    np.array(sorted(pairs), np.int64))  # fmt: skip


def _doc(p: Patterns) -> dict:
    return {"templates": p.templates, "ids": p.ids, "vocab": p.vocab.to_pylist(), "key_order": p.key_order.tolist(),
           "key_bounds": p.key_bounds.tolist(), "loggers": p.loggers, "pairs": p.pairs.tolist()}  # fmt: skip


def _from_doc(d: dict) -> Patterns:
    return Patterns(d["templates"], d["ids"], pa.array(d["vocab"], pa.string()), np.array(d["key_order"], np.int64),
                    np.array(d["key_bounds"], np.int64), d["loggers"], np.array(d["pairs"], np.int64))  # fmt: skip


def source_key() -> str:
    """What a compiled copy is compiled from: a hash of the catalogue file and of the code of this
    module and of :mod:`lineage <kitlib.formats.logs.lineage>` (any of them changing makes a new
    key, and every copy with the old key is compiled again)."""
    h = hashlib.sha256(st.DATA_FILE.read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(Path(lin.__file__).read_bytes())
    return h.hexdigest()[:24]


def cache_file(key: str | None = None) -> Path:
    """Where a compiled catalogue is kept between processes when the shipped copy does not fit the
    code: ``$KITLIB_CACHE_DIR``, else ``$XDG_CACHE_HOME/kitlib`` (an absolute one), else
    ``~/.cache/kitlib``, in ``statements/``, named by :func:`source_key`."""
    own = os.environ.get("KITLIB_CACHE_DIR")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if own:
        root = Path(own).expanduser()
    else:
        root = (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "kitlib"
    return root / "statements" / f"patterns-{key or source_key()}.json"


def _shipped(key: str) -> Patterns | None:
    """The shipped copy, when it was compiled from ``key``."""
    try:
        doc = json.loads(gzip.decompress(SHIPPED_FILE.read_bytes()))
    except (OSError, EOFError, ValueError, zlib.error):  # missing, cut short or damaged
        return None
    if not isinstance(doc, dict) or doc.get("key") != key:
        return None
    try:
        return _from_doc(doc)
    except (KeyError, TypeError, ValueError):
        return None


def write_shipped(path: Path = SHIPPED_FILE) -> Path:
    """Compile the catalogue and write it as the copy that ships with the kit (``make patterns``)."""
    doc = {"key": source_key(), **_doc(_compile())}
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))  # the same catalogue gives the same bytes
    os.replace(tmp, path)
    return path


@cache
def patterns() -> Patterns:
    """The shipped catalogue, compiled, once per process: the shipped copy (about 20 ms), else the
    user's cached copy, else compiled (about a second) and written to that cache (older ones
    removed). A cache that cannot be read or written is compiled around;
    ``KITLIB_TEMPLATE_CACHE=0`` always compiles."""
    if os.environ.get("KITLIB_TEMPLATE_CACHE", "").strip().lower() in ("0", "false", "no"):
        return _compile()
    try:
        key = source_key()
    except OSError:
        return _compile()
    shipped = _shipped(key)
    if shipped is not None:
        return shipped
    path = cache_file(key)
    try:
        return _from_doc(json.loads(path.read_bytes()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    p = _compile()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(json.dumps(_doc(p), separators=(",", ":"), ensure_ascii=False).encode())
        os.replace(tmp, path)  # readers see the whole file or none
        for stale in path.parent.glob("patterns-*.json"):  # an older catalogue's or code's
            if stale != path:
                stale.unlink(missing_ok=True)
    except OSError:
        pass
    return p


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m kitlib.formats.logs.compiled",
        description="Compile the catalogue of Kafka's log statements for matching and write the copy that ships with the kit.",
    )
    ap.add_argument("--out", type=Path, default=SHIPPED_FILE, help="where to write it (default: %(default)s)")
    args = ap.parse_args(argv)
    print(write_shipped(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
