"""Every adversarial case (tests/adversarial/) through the command line, checking the README's
promises case by case:

- lines accounted per file against an independent count of the decompressed bytes' newlines,
  and parsed + unparsed == lines;
- every path on disk either read or listed in ``files`` as not read, with why;
- inputs byte-identical before and after (content, symlink targets, modes);
- no planted secret (tests/adversarial/SECRETS) in any output: every string of every Parquet
  table, summary.json, triage text and JSON, the terminal, report HTML for two cases;
- no traceback on stderr, no raw control character on the terminal;
- exit codes as documented (ingest 0, or 2 for a bad manifest; triage 0/1, or 2);
- peak memory (the child's own VmHWM) under :data:`MEMORY_BOUND_MB`.

As root, commands run without the capabilities that let root read any file, so unreadable
paths are really unreadable.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import io
import json
import lzma
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# every case runs the kitlib command several times in fresh processes: an end-to-end suite for
# `make test`, kept out of the fast lane (`make check`)
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "adversarial"
STATIC = sorted(p.name for p in (CORPUS / "cases").iterdir() if p.is_dir())
GENERATED = [
    "codecs",
    "links",
    "unread",
    "deep-json",
    "secrets-chunks",
    "zip-crc",
    "deep-nest",
    "special-files",
    "nested-zip",
    "symlink-fan-in",
    "crafted-store",
    "odd-names",
    "zip-2000",
]
BIG = ["long-line", "many-files", "big-gzip", "tiny-lines", "zip-20k", "small-files-20k"]
SECRETS = [s for s in (CORPUS / "SECRETS").read_text().split("\n") if s.strip()]
MEMORY_BOUND_MB = 1024  # peak RSS of one `kitlib ingest` on any case, the 512 MiB line included
# cases whose memory once grew with their count of files, members or lines are held tighter
# (before: 100,000 small files peaked at 1.7 GB, ten million one-byte lines at 2.6 GB)
TIGHT_BOUND_MB = {"zip-20k": 450, "small-files-20k": 450, "tiny-lines": 500, "many-files": 450}
CONTROL = ["\x1b", "\x07", "\r", "\x08", "\x9b"]

sys.path.insert(0, str(CORPUS))
from generate import generate  # noqa: E402


def _no_dac_override() -> list[str]:
    if os.geteuid() == 0 and shutil.which("setpriv"):
        return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
    return []


@dataclass
class Run:
    rc: int
    out: str
    err: str
    rss_mb: float
    seconds: float


# the child writes its own peak RSS (VmHWM of its address space) when it exits: getrusage of a
# child counts what it inherited from this (big) test process at fork
_MEASURED = (
    "import atexit, os, sys\n"
    "def _peak():\n"
    "    hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM:')]\n"
    "    open(os.environ['KIT_PEAK_FILE'], 'w').write(hwm[0].split()[1] if hwm else '0')\n"
    "atexit.register(_peak)\n"
    "from kitlib.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def kitlib(*args: str, cwd: Path | None = None) -> Run:
    """Run the CLI in a child process, which reports its own peak RSS."""
    with (
        tempfile.TemporaryFile() as o,
        tempfile.TemporaryFile() as e,
        tempfile.NamedTemporaryFile("r", suffix=".peak") as peak,
    ):
        os.chmod(peak.name, 0o666)
        t = time.perf_counter()
        p = subprocess.run(
            _no_dac_override() + [sys.executable, "-c", _MEASURED, *args],
            stdout=o,
            stderr=e,
            cwd=cwd,
            env=dict(os.environ, PYTHONWARNINGS="ignore", KIT_PEAK_FILE=peak.name),
        )
        o.seek(0)
        e.seek(0)
        kb = peak.read().strip()
        return Run(
            p.returncode,
            o.read().decode("utf-8", "replace"),
            e.read().decode("utf-8", "replace"),
            int(kb or 0) / 1024,
            time.perf_counter() - t,
        )


def kitlib_here(*args: str) -> Run:
    """Run the CLI in this process (no start-up cost; for commands whose memory is not measured)."""
    import io

    from kitlib.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    t = time.perf_counter()
    try:
        rc = main(list(args))
    except SystemExit as e:
        rc = int(e.code or 0)
    finally:
        sys.stdout, sys.stderr = saved
    return Run(rc, out.getvalue(), err.getvalue(), 0.0, time.perf_counter() - t)


# --- what the inputs are --------------------------------------------------------------------
def walk_tree(root: Path):
    """(folder, names of what it holds) for every folder under ``root``, links not followed, with
    a stack (os.walk recurses, and a case nests folders 1,500 deep); unreadable folders are named
    by their parent and not entered, as os.walk does."""
    folders = [str(root)]
    while folders:
        d = folders.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        yield d, [e.name for e in entries]
        folders.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))


def snapshot(root: Path) -> dict:
    """Every path under ``root`` (links not followed): content hash, link target or kind, mode."""
    out = {}
    for dirpath, names in walk_tree(root):
        for name in names:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = "link:" + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(p, "rb") as fh:
                    for b in iter(lambda: fh.read(1 << 20), b""):
                        h.update(b)
                what = h.hexdigest()
            else:
                what = "dir" if stat.S_ISDIR(st.st_mode) else "special"
            out[os.fsencode(p.relative_to(root))] = (what, stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return out


def shown(rel: str) -> str:
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _stream(fh) -> bytes:
    """The decompressed content of ``fh`` in 1 MiB pieces (an independent reader: the stdlib
    modules and the codec packages' own file objects)."""
    head = fh.read(6)
    fh.seek(0)
    if head.startswith(b"\x1f\x8b"):
        r = gzip.GzipFile(fileobj=fh)
    elif head.startswith(b"\x28\xb5\x2f\xfd"):
        import zstandard

        r = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
    elif head.startswith(b"\xfd7zXZ\x00"):
        r = lzma.LZMAFile(fh)
    elif head.startswith(b"BZh"):
        r = bz2.BZ2File(fh)
    elif head.startswith(b"\x04\x22\x4d\x18"):
        import lz4.frame

        r = lz4.frame.LZ4FrameFile(fh)
    else:
        r = fh
    first = True
    utf16 = None
    while True:
        try:
            b = r.read(1 << 20)
        except (OSError, EOFError, lzma.LZMAError, RuntimeError, ValueError):
            return  # corrupt: what came before counts
        if not b:
            break
        if first and b.startswith((b"\xff\xfe", b"\xfe\xff")):
            import codecs

            utf16 = codecs.getincrementaldecoder("utf-16")()
        first = False
        yield utf16.decode(b).encode("utf-8") if utf16 else b


def independent_lines(path: Path, member: str = "") -> int:
    """Newlines in the decompressed content, plus one for a last line without one. A file whose
    first 64 KiB hold a CR and no LF ends its lines with CR (CR LF counts once), as the README says."""
    if member:
        return _count_lines(list(_stream(zip_member(path, member))))
    with open(path, "rb") as fh:
        return _count_lines(_stream(fh))


@functools.lru_cache(maxsize=8)
def _zip(path: Path) -> zipfile.ZipFile:
    return zipfile.ZipFile(path)  # opened once: a case holds a zip of 100,000 members


def zip_member(path: Path, member: str) -> io.BytesIO:
    """The bytes of ``member`` of the zip at ``path`` (``a.zip/b/c.log`` inside it is a member of a
    zip inside the zip), as far as they can be read: a member failing its CRC gives what came
    before the failing read."""
    z, rest = _zip(path), member
    while True:  # an archive inside the archive: open it and look inside
        parts = rest.split("/")
        inner = next((i for i in range(1, len(parts)) if "/".join(parts[:i]) in z.NameToInfo), None)
        if inner is None:
            break
        z = zipfile.ZipFile(io.BytesIO(z.read("/".join(parts[:inner]))))
        rest = "/".join(parts[inner:])
    out = bytearray()
    with z.open(rest) as raw:
        try:
            while b := raw.read(1 << 16):
                out += b
        except (zipfile.BadZipFile, zlib.error, EOFError):
            pass
    return io.BytesIO(bytes(out))


def _count_lines(pieces) -> int:
    n, last, cr = 0, b"\n", None
    for b in pieces:
        if cr is None:  # the pieces are 1 MiB: the first holds the 64 KiB that decide
            cr = b"\r" in b[:65536] and b"\n" not in b[:65536]
        if cr:
            b = b.replace(b"\r\n", b"\r")  # (a CR LF split across pieces would count twice: not in the corpus)
            n += b.count(b"\r")
            last = b"\n" if b[-1:] == b"\r" else (b[-1:] or last)
        else:
            n += b.count(b"\n")
            last = b[-1:] or last
    return n + (0 if last == b"\n" else 1)


def disk_paths(root: Path) -> dict[str, Path]:
    """shown rel path -> path, for every file, link and (hidden) folder of the bundle."""
    out = {}
    for dirpath, names in walk_tree(root):
        for name in names:
            p = Path(dirpath) / name
            out[shown(p.relative_to(root).as_posix())] = p
    return out


# --- what the outputs hold ------------------------------------------------------------------
def stored_secrets(out: Path) -> list[str]:
    """The planted secrets found in any string of any table of the output (read a batch at a
    time, matched in Arrow: ten million unparsed rows must not become Python strings) or in its
    JSON files."""
    import re

    import pyarrow.compute as pc

    pattern = "|".join(re.escape(sec) for sec in SECRETS)
    hits: list[str] = []
    for p in sorted(out.glob("*.parquet")):
        for batch in pq.ParquetFile(p).iter_batches(batch_size=1 << 18):
            for col in batch.columns:
                if pa.types.is_dictionary(col.type):
                    col = col.dictionary
                if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                    matched = pc.match_substring_regex(col, pattern)
                    hits.extend(v for v in pc.filter(col, matched.fill_null(False)).to_pylist() if v)
    hits.extend(p.read_text() for p in out.glob("*.json"))
    return [sec for sec in SECRETS if any(sec in t for t in hits)]


def held(fig: dict, promise: str, ok: bool, message) -> None:
    """Record one check of ``promise`` on the case (its figures count the checks per promise, and
    name the promise a case broke), then assert it."""
    fig["checks"][promise] = fig["checks"].get(promise, 0) + 1
    if not ok:
        fig["broken"] = promise
        _record(fig)
    assert ok, message() if callable(message) else message


def _record(fig: dict) -> None:
    """Append the case's figures to the file $KIT_ADVERSARIAL_FIGURES names (one JSON object a
    line), for ``python tests/adversarial/figures.py FILE`` to total per promise."""
    path = os.environ.get("KIT_ADVERSARIAL_FIGURES")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(fig) + "\n")


def assert_clean(run: Run, what: str, fig: dict) -> None:
    held(fig, "no traceback", "Traceback" not in run.err, lambda: f"{what}: traceback\n{run.err[-2000:]}")
    for c in CONTROL:
        held(
            fig,
            "terminal harmless",
            c not in run.out and c not in run.err,
            f"{what}: raw control {c!r} on the terminal",
        )
    for sec in SECRETS:
        held(
            fig,
            "no secret on the terminal",
            sec not in run.out and sec not in run.err,
            f"{what}: secret {sec} on the terminal",
        )


def expected_rc(case: str) -> int:
    return 2 if case.startswith("manifest-") else 0


# --- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def generated():
    root = Path(tempfile.mkdtemp(prefix="kit-adversarial-"))
    generate(root, with_big=False)
    yield root
    _unlock(root)
    remove_tree(root)


@pytest.fixture(scope="module")
def generated_big():
    root = Path(tempfile.mkdtemp(prefix="kit-adversarial-big-"))
    from generate import big

    big(root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def remove_tree(root: Path) -> None:
    """Remove a case folder: ``rm -rf`` walks without recursing (shutil.rmtree recurses, and a case
    nests folders 1,500 deep)."""
    subprocess.run(["rm", "-rf", "--", str(root)], check=False)


def _unlock(root: Path) -> None:
    for dirpath, names in walk_tree(root):  # a folder's entries are opened up before it is entered
        for n in names:
            p = Path(dirpath) / n
            if not p.is_symlink():
                os.chmod(p, 0o755)


# --- the check of one case --------------------------------------------------------------------
def check_case(name: str, bundle: Path, out_root: Path, raw_triage: bool = True) -> dict:
    before = snapshot(bundle)
    out = out_root / name
    fig: dict = {"case": name, "checks": {}, "broken": "", "lines_lost": 0, "secrets_leaked": 0, "files": 0}
    ing = kitlib("ingest", str(bundle), "--out", str(out), "--no-progress")
    fig.update(rc=ing.rc, rss_mb=round(ing.rss_mb), seconds=round(ing.seconds, 1))
    assert_clean(ing, f"{name}: ingest", fig)
    held(fig, "exit code", ing.rc == expected_rc(name), lambda: f"{name}: ingest exit {ing.rc}\n{ing.out}\n{ing.err}")
    if ing.rc == 2:
        assert "error" in ing.err and ("bundle.yaml" in ing.err or "bundle.json" in ing.err), ing.err
        held(fig, "a refused run writes nothing", not out.exists(), "a refused ingest leaves no output")
    else:
        files = pq.read_table(out / "files.parquet").to_pandas()
        on_disk = disk_paths(bundle)
        fig["files"], fig["not_read"] = int((files.format != "not read").sum()), int((files.format == "not read").sum())
        for r in files.itertuples():
            if r.format == "not read":
                held(fig, "what is not read says why", bool(r.error) and "not read" in r.error, repr(r))
                continue
            top = r.file.split("/")
            zip_at = next((i for i, p in enumerate(top) if p.endswith(".zip")), None)
            if zip_at is not None and zip_at < len(top) - 1:
                path, member = on_disk["/".join(top[: zip_at + 1])], "/".join(top[zip_at + 1 :])
            else:
                path, member = on_disk[r.file], ""
            if "binary content" in (r.error or ""):
                continue
            want = independent_lines(path, member)
            held(
                fig,
                "lines add up",
                r.parsed + r.unparsed == r.lines,
                f"{name}/{r.file}: {r.lines} lines, {r.parsed} + {r.unparsed}",
            )
            if "corrupt" in (r.error or "") or "truncated" in (r.error or ""):
                # readers stop at different points of a damaged stream: the kit keeps what it read
                held(fig, "every line counted", r.lines > 0 and "line" in r.error, repr((r.file, r.lines, want)))
            else:
                fig["lines_lost"] += abs(int(r.lines) - want)
                held(
                    fig,
                    "every line counted",
                    r.lines == want,
                    f"{name}/{r.file}: kit counted {r.lines} lines, the content holds {want}",
                )
        listed = set(files.file)
        for rel in on_disk:
            parts = rel.split("/")
            if len(parts) == 1 and rel in ("bundle.yaml", "bundle.yml", "bundle.json"):
                continue
            held(
                fig,
                "every path read or listed",
                any("/".join(parts[:i]) in listed for i in range(1, len(parts) + 1))
                or any(f.startswith(rel + "/") for f in listed),
                f"{name}: {rel} neither read nor listed as not read",
            )
        for table in ("events", "unparsed"):  # row groups by rows held, never one per file
            if (out / f"{table}.parquet").exists():
                meta = pq.ParquetFile(out / f"{table}.parquet").metadata
                held(
                    fig,
                    "row groups by rows held",
                    meta.num_row_groups <= 1 + meta.num_rows // 1000,
                    repr((name, table, meta.num_row_groups)),
                )
        leaked = stored_secrets(out)
        fig["secrets_leaked"] = len(leaked)
        held(fig, "no secret stored", not leaked, f"{name}: secrets stored: {leaked}")
    # triage on the ingest output, and on the raw bundle itself (whose files are evidence only)
    targets = [str(out)] if ing.rc == 0 else []
    if raw_triage or ing.rc != 0:
        targets.append(str(bundle))
    for target in targets:
        for args in (("triage", target), ("triage", target, "--json")):
            tr = kitlib_here(*args)
            what = f"{name}: {args[0]} {'output' if target == str(out) else 'raw bundle'} {' '.join(args[2:])}"
            assert_clean(tr, what, fig)
            ok_rc = (2,) if expected_rc(name) == 2 else (0, 1)
            held(fig, "exit code", tr.rc in ok_rc, f"{what}: exit {tr.rc}\n{tr.err[-2000:]}")
    held(fig, "inputs unchanged", snapshot(bundle) == before, f"{name}: an input changed")
    bound = TIGHT_BOUND_MB.get(name, MEMORY_BOUND_MB)
    held(fig, "memory bounded", fig["rss_mb"] < bound, f"{name}: peak memory {fig['rss_mb']} MB (bound {bound} MB)")
    _record(fig)
    return fig


@pytest.mark.parametrize("case", STATIC)
def test_small_case(case, tmp_path):
    check_case(case, CORPUS / "cases" / case, tmp_path)


@pytest.mark.parametrize("case", GENERATED)
def test_generated_case(case, generated, tmp_path):
    check_case(case, generated / case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", BIG)
def test_big_case(case, generated_big, tmp_path):
    check_case(case, generated_big / case, tmp_path, raw_triage=False)


def test_the_file_outside_the_bundle_was_not_read(generated, tmp_path):
    run = kitlib("ingest", str(generated / "links"), "--out", str(tmp_path / "o"), "--no-progress")
    files = pq.read_table(tmp_path / "o" / "files.parquet").to_pandas().set_index("file")
    assert files.loc["broker-1/server.log", "lines"] == 12
    # a link inside is followed, and its file read once: under its own name
    assert files.loc["broker-1/current.log", "error"].endswith("link to broker-1/server.log, read once there")
    for rel, why in (
        ("broker-1/outside.log", "outside the bundle"),
        ("broker-1/outside-dir", "outside the bundle"),
        ("broker-1/dangling.log", "dangling"),
        ("broker-1/loop-a", "loop"),
        ("broker-1/up", "loop"),
    ):
        assert files.loc[rel, "format"] == "not read" and why in files.loc[rel, "error"], (rel, files.loc[rel, "error"])
    assert run.rc == 0


def test_unreadable_and_odd_names_are_listed(generated, tmp_path):
    kitlib("ingest", str(generated / "unread"), "--out", str(tmp_path / "o"), "--no-progress")
    files = pq.read_table(tmp_path / "o" / "files.parquet").to_pandas().set_index("file")
    assert files.loc["broker-1/caf\\xe9-\\xff.log", "lines"] == 4  # a non-UTF-8 name, shown escaped
    assert files.loc["broker-1/evil\x1b[2J\x07.log", "lines"] == 2  # stored as is, shown escaped
    for rel, why in (
        (".git", "hidden"),
        ("broker-1/.hidden.log", "hidden"),
        ("broker-1/README.md", "notes"),
        ("broker-1/summary.json", "kit output"),
        ("broker-1/events.parquet", "Parquet"),
        ("broker-1/pipe", "not a regular file"),
    ):
        assert why in files.loc[rel, "error"], (rel, files.loc[rel, "error"])
    if _no_dac_override() or os.geteuid() != 0:
        assert "permission denied" in files.loc["broker-1/locked.log", "error"].lower()
        assert "cannot be read" in files.loc["broker-2", "error"]


def test_codecs_and_a_corrupt_gzip(generated, tmp_path):
    run = kitlib("ingest", str(generated / "codecs"), "--out", str(tmp_path / "o"), "--no-progress")
    files = pq.read_table(tmp_path / "o" / "files.parquet").to_pandas().set_index("file")
    for rel in ("server.log.1.gz", "server.log.2.zst", "server.log.3.xz", "server.log.4.bz2", "server.log.5.lz4"):
        assert files.loc[f"broker-1/{rel}", "format"] == "log4j" and files.loc[f"broker-1/{rel}", "unparsed"] == 0
    assert files.loc["broker-1/connect.log", "parsed"] == 8  # UTF-16 with a BOM
    assert files.loc["archive.zip/broker-2/server.log", "host"] == "broker-2"  # zip read as a folder
    assert "not read" in files.loc["archive.zip/broker-2/.hidden.log", "error"]
    assert "zip archive cannot be read" in files.loc["broken.zip", "error"]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("state-change.log.gz" in e and "corrupt gzip" in e for e in summary["errors"])
    assert files.loc["broker-1/state-change.log.gz", "lines"] > 1000  # what came before the damage
    assert run.rc == 0


def test_out_of_range_timestamps_cost_their_lines(tmp_path):
    kitlib("ingest", str(CORPUS / "cases" / "timestamps"), "--out", str(tmp_path / "o"), "--no-progress")
    un = pq.read_table(tmp_path / "o" / "unparsed.parquet").to_pandas()
    reasons = {(r.file, r.line): r.reason for r in un.itertuples()}
    assert "year 9999" in reasons[("broker-1/server.log", 2)] and "year 1600" in reasons[("broker-1/server.log", 3)]
    assert "year 0000" in reasons[("broker-1/server.log", 4)]
    assert "out of range" in reasons[("broker-1/jmx.csv", 3)]
    assert "out of range" in reasons[("broker-1/scrape.prom", 4)]
    assert "out of range" in reasons[("broker-1/scrape.prom", 6)]
    ev = pq.read_table(tmp_path / "o" / "events.parquet").to_pandas()
    assert sorted(ev.line) == [1, 6]


def test_bad_options_and_outputs_are_refused_before_anything_is_touched(tmp_path):
    bundle = tmp_path / "x" / "b"
    shutil.copytree(CORPUS / "cases" / "secrets", bundle)
    (tmp_path / "x" / "tables").mkdir()
    (tmp_path / "x" / "tables" / "keep.log").write_text("user data\n")
    before = snapshot(tmp_path)
    for args in (
        ("ingest", str(bundle), "--out", str(bundle)),
        ("ingest", str(bundle), "--out", str(bundle / "o")),
        ("ingest", str(bundle), "--out", str(tmp_path / "x")),
        ("ingest", str(bundle), "--out", str(tmp_path / "x" / "tables")),  # not kit output: kept
        ("report", str(bundle), "--out", str(tmp_path / "x")),
        ("report", str(bundle), "--out", str(bundle)),
        ("report", str(tmp_path / "x" / "tables"), "--out", str(tmp_path / "x")),
        ("ingest", str(bundle), "--out", str(tmp_path / "o2"), "--tz", "Not/AZone"),
        ("triage", str(bundle), "--tz", "Not/AZone"),
        ("triage", str(tmp_path / "missing")),
    ):
        run = kitlib_here(*args)
        assert run.rc == 2 and "error" in run.err, (args, run.rc, run.err)
        assert "Traceback" not in run.err
    assert snapshot(tmp_path) == before


def test_reingest_replaces_the_output_whole(tmp_path):
    out = tmp_path / "o"
    assert kitlib("ingest", str(CORPUS / "cases" / "secrets"), "--out", str(out), "--no-progress").rc == 0
    assert (out / "metrics.parquet").exists()
    assert kitlib("ingest", str(CORPUS / "cases" / "terminal"), "--out", str(out), "--no-progress").rc == 0
    assert not (out / "metrics.parquet").exists(), "a table of the previous bundle stayed"
    assert json.loads((out / "summary.json").read_text())["bundle"].endswith("terminal")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary folder stayed"


@pytest.mark.slow
@pytest.mark.parametrize("case", ["secrets", "secrets-shapes", "secrets-multiline", "host-notes"])
def test_report_html_holds_no_secret_and_keeps_every_host(case, tmp_path):
    run = kitlib("report", str(CORPUS / "cases" / case), "--out", str(tmp_path / "r"), "--notebook", "triage")
    assert "Traceback" not in run.err and run.rc in (0, 1), run.err
    html = "".join(p.read_text(errors="replace") for p in (tmp_path / "r").rglob("*.html"))
    html += "".join(p.read_text(errors="replace") for p in (tmp_path / "r").rglob("*.ipynb"))
    assert not [s for s in SECRETS if s in html]
    if case == "host-notes":
        assert (tmp_path / "r" / "index.html").exists() and not (tmp_path / "r" / "broker-1").exists()
        summary = json.loads((tmp_path / "r" / "tables" / "summary.json").read_text())
        assert summary["hosts"] == ["broker-1", "broker-2"]
