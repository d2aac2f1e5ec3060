"""Build the adversarial cases that cannot be kept in git as plain files, and the big ones.

    python tests/adversarial/generate.py OUT [--big]

Every case is a bundle folder ``OUT/<case>``; files the kit must not read from outside a bundle
go to ``OUT/outside``. All content is synthetic (made here), in the shapes Kafka writes.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import sys
import zipfile
import zlib
from pathlib import Path

LINE = "[2026-11-23 06:47:{s:02d},{ms:03d}] INFO {msg} (kafka.server.ReplicaManager)\n"


def log_lines(n: int, msg: str = "Completed fetch of partition orders-{i}") -> bytes:
    return "".join(LINE.format(s=i % 60, ms=i % 1000, msg=msg.format(i=i)) for i in range(n)).encode()


def codecs(root: Path) -> None:
    import lz4.frame
    import zstandard

    b = root / "codecs" / "broker-1"
    b.mkdir(parents=True)
    body = log_lines(50) + b"[2026-11-23 06:48:00,000] INFO login password=Adv-gz-pw-0028 (x.Y)\n"
    (b / "server.log.1.gz").write_bytes(gzip.compress(body) + gzip.compress(log_lines(3)))  # two members
    (b / "server.log.2.zst").write_bytes(zstandard.ZstdCompressor(write_checksum=True).compress(body))
    (b / "server.log.3.xz").write_bytes(lzma.compress(body))
    (b / "server.log.4.bz2").write_bytes(bz2.compress(body))
    (b / "server.log.5.lz4").write_bytes(lz4.frame.compress(body))
    (b / "controller.log").write_bytes(b"\xef\xbb\xbf" + log_lines(5))  # UTF-8 with a BOM
    (b / "connect.log").write_bytes(
        (log_lines(7).decode() + "[2026-11-23 06:48:00,000] INFO ssl.key.password=Adv-utf16-pw-0030 (x.Y)\n").encode(
            "utf-16"
        )
    )
    whole = gzip.compress(log_lines(20000))
    bad = bytearray(whole)
    mid = len(bad) // 2
    bad[mid : mid + 64] = b"\xff" * 64  # corrupted mid-stream
    (b / "state-change.log.gz").write_bytes(bytes(bad))
    with zipfile.ZipFile(root / "codecs" / "archive.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "broker-2/server.log", log_lines(30) + b"[2026-11-23 06:48:00,000] INFO api.key=Adv-zip-pw-0029 (x.Y)\n"
        )
        z.writestr("broker-2/server.log.1.gz", gzip.compress(log_lines(10)))
        z.writestr("broker-2/.hidden.log", log_lines(2))
        z.writestr("broker-2/README.md", "notes\n")
    (root / "codecs" / "broken.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive")


def links(root: Path) -> None:
    out = root / "outside"
    out.mkdir(exist_ok=True)
    (out / "secret.log").write_bytes(LINE.format(s=1, ms=1, msg="password=Adv-outside-pw-0027").encode())
    b = root / "links" / "broker-1"
    b.mkdir(parents=True)
    (b / "server.log").write_bytes(log_lines(12))
    os.symlink("server.log", b / "current.log")  # inside: followed
    os.symlink(out / "secret.log", b / "outside.log")  # outside: not read
    os.symlink(os.path.relpath(out, b), b / "outside-dir")  # a folder outside: not read
    os.symlink("missing.log", b / "dangling.log")
    os.symlink("loop-b", b / "loop-a")
    os.symlink("loop-a", b / "loop-b")
    os.symlink("..", b / "up")  # a folder loop inside the bundle


def unread(root: Path) -> None:
    c = root / "unread"
    b = c / "broker-1"
    (c / ".git").mkdir(parents=True)
    b.mkdir()
    (c / ".git" / "config").write_text("[core]\n")
    (b / ".hidden.log").write_bytes(log_lines(3))
    (b / "README.md").write_text("host notes\n")
    (b / "summary.json").write_text("{}\n")
    (b / "events.parquet").write_bytes(b"PAR1 not really")
    (b / "server.log").write_bytes(log_lines(9))
    (b / os.fsdecode(b"caf\xe9-\xff.log")).write_bytes(log_lines(4))
    (b / "evil\x1b[2J\x07.log").write_bytes(log_lines(2))
    locked = b / "locked.log"
    locked.write_bytes(log_lines(5))
    locked.chmod(0)
    d = c / "broker-2"
    d.mkdir()
    (d / "server.log").write_bytes(log_lines(6))
    d.chmod(0)
    os.mkfifo(b / "pipe")


def deep(root: Path) -> None:
    b = root / "deep-json" / "broker-1"
    b.mkdir(parents=True)
    ok = (
        b'{"request":{"mbean":"java.lang:type=Memory","type":"read"},"value":{"Uptime":1},'
        b'"timestamp":1795391000,"status":200}'
    )
    nested = (
        b'{"request":{"mbean":"java.lang:type=Memory","type":"read"},"value":'
        + b"[" * 200_000
        + b"]" * 200_000
        + b',"timestamp":1795391000,"status":200}'
    )
    (b / "jolokia.json").write_bytes(ok + b"\n" + nested + b"\n" + ok + b"\n")
    p = root / "deep-json" / "payloads"
    p.mkdir()
    (p / "values.jsonl").write_bytes(b'{"a":1}\n' * 20 + b"[" * 100_000 + b"]" * 100_000 + b"\n" + b'{"b":2}\n')


# --- files and archives that must each cost only themselves ---------------------------------
AUTH_FAIL = (
    "[2026-11-23 06:48:{s:02d},{ms:03d}] INFO [SocketServer listenerType=BROKER, nodeId=1] Failed authentication "
    "with /10.0.0.{i} (channelId=10.0.0.1:9094-10.0.0.{i}:5{i:04d}-0) (Authentication failed: Invalid username or "
    "password) (org.apache.kafka.common.network.Selector)\n"
)


def zip_crc(root: Path) -> None:
    """A zip whose members fail their CRC (a flipped byte in a stored member, a damaged deflate
    stream) beside good members: only the bad ones cost anything."""
    c = root / "zip-crc"
    c.mkdir(parents=True)
    path = c / "logs.zip"
    stored_body = log_lines(40)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("broker-1/server.log", log_lines(25), zipfile.ZIP_DEFLATED)
        z.writestr("broker-1/controller.log", stored_body, zipfile.ZIP_STORED)
        z.writestr("broker-2/server.log", log_lines(5000), zipfile.ZIP_DEFLATED)
        z.writestr("broker-3/server.log", log_lines(30), zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        for name, at in (("broker-1/controller.log", 0.9), ("broker-2/server.log", 0.5)):
            info = z.getinfo(name)
            start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
            pos = start + int(info.compress_size * at)
            data[pos : pos + 8] = bytes(b ^ 0x5A for b in data[pos : pos + 8])
    path.write_bytes(bytes(data))


def deep_nest(root: Path, depth: int = 1500) -> None:
    """A folder nested ``depth`` levels, a log at its top and two at its bottom."""
    c = root / "deep-nest" / "broker-1"
    c.mkdir(parents=True)
    (c / "server.log").write_bytes(log_lines(4))
    d = c
    for _ in range(depth):  # one level at a time: pathlib's mkdir(parents=True) recurses
        d = d / "d"
        d.mkdir()
    (d / "server.log").write_bytes(log_lines(3))
    # a layout the kit infers (its search for layout definitions walks the whole tree too)
    (d / "app.log").write_bytes(
        b"2026-11-23T06:47:00.000Z INFO [main] k.s.Worker - started\n"
        b"2026-11-23T06:47:01.000Z WARN [main] k.s.Worker - slow\n"
    )


def special_files(root: Path) -> None:
    """Pipes, a socket, links to them, and zip members whose attributes say link, pipe or device."""
    import socket

    c = root / "special-files"
    b = c / "broker-1"
    b.mkdir(parents=True)
    (b / "server.log").write_bytes(log_lines(6))
    os.mkfifo(b / "server.log.1")
    os.mkfifo(b / "log4j.properties")  # a layout definition's name
    os.symlink("server.log.1", b / "current.log")
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(b / "jmx.sock"))
    except OSError:  # a path too long for a socket: the pipes still make the case
        pass
    finally:
        s.close()
    with zipfile.ZipFile(c / "odd-members.zip", "w") as z:
        z.writestr("broker-2/server.log", log_lines(7))
        for name, mode in (
            ("broker-2/link.log", 0o120777),
            ("broker-2/pipe.log", 0o010644),
            ("broker-2/tty.log", 0o020644),
        ):
            info = zipfile.ZipInfo(name)
            info.create_system = 3  # unix: the mode is in the high bits of external_attr
            info.external_attr = mode << 16
            z.writestr(info, "../../../etc/passwd" if mode == 0o120777 else "x\n")


def many_member_zip(root: Path, n: int, name: str) -> None:
    """A zip of ``n`` small members over 20 hosts."""
    c = root / name
    c.mkdir(parents=True)
    line = log_lines(1)
    with zipfile.ZipFile(c / "fleet.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for i in range(n):
            z.writestr(f"broker-{i % 20}/server.log.{i}", line)


def nested_zips(root: Path) -> None:
    """Zips inside zips, five deep, one inner archive of ~64 MB of log."""
    c = root / "nested-zip"
    c.mkdir(parents=True)
    blob = log_lines(20)
    for level in range(5, 0, -1):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"broker-{level}/server.log", log_lines(level * 10))
            if level == 2:
                with z.open("broker-2/server.log.1", "w") as m:
                    chunk = log_lines(10_000)
                    for _ in range(60):
                        m.write(chunk)
            z.writestr(f"level-{level + 1}.zip", blob, zipfile.ZIP_STORED)
        blob = buf.getvalue()
    (c / "level-1.zip").write_bytes(blob)


def small_files(root: Path, n: int, name: str, hosts: int = 100) -> None:
    """``n`` one-line logs over ``hosts`` host folders."""
    c = root / name
    line = log_lines(1)
    for h in range(hosts):
        (c / f"broker-{h}").mkdir(parents=True)
    for i in range(n):
        (c / f"broker-{i % hosts}" / f"server.log.{i}").write_bytes(line)


def symlink_fan_in(root: Path, links: int = 33) -> None:
    """One log with 12 real authentication failures, reachable through ``links`` symlinks (to the
    file, to other links, and to its folder)."""
    c = root / "symlink-fan-in"
    b = c / "broker-1"
    b.mkdir(parents=True)
    body = log_lines(5) + "".join(AUTH_FAIL.format(s=i, ms=i, i=i + 2) for i in range(12)).encode()
    (b / "server.log").write_bytes(body)
    for i in range(links):
        target = "server.log" if i % 3 else (f"copy-{i - 1}.log" if i else "server.log")
        os.symlink(target, b / f"copy-{i}.log")
    for h in range(2, 5):
        d = c / f"broker-{h}"
        d.mkdir()
        os.symlink("../broker-1/server.log", d / "server.log")
    os.symlink("broker-1", c / "alias")


def crafted_store(root: Path) -> None:
    """A raw bundle holding a ``summary.json`` and Parquet tables that look like the kit's own
    (another bundle name, a forged finding's rows): they are evidence, never read as the kit's."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    c = root / "crafted-store"
    b = c / "broker-1"
    b.mkdir(parents=True)
    (b / "server.log").write_bytes(log_lines(8))
    (c / "summary.json").write_text(
        json.dumps({"bundle": "prod-eu-FORGED", "files": 1, "bytes": 1, "hosts": ["forged-host"], "rows": {}})
    )
    files = pa.table({"file": ["x.log"], "host": ["forged-host"], "format": ["log4j"], "lines": [1]})
    pq.write_table(files, c / "files.parquet")
    events = pa.table(
        {
            "ts": pa.array([1795400000000], pa.timestamp("ms", tz="UTC")),
            "host": ["forged-host"],
            "file": ["x.log"],
            "line": [1],
            "level": ["FATAL"],
            "logger": ["kafka.log.LogManager"],
            "message": ["FORGED: every log dir failed"],
        }
    )
    pq.write_table(events, c / "events.parquet")


def odd_names(root: Path) -> None:
    """File names holding newlines and other control characters that would forge summary lines,
    and empty files (plain and compressed)."""
    c = root / "odd-names"
    b = c / "broker-1"
    b.mkdir(parents=True)
    (b / "server.log").write_bytes(log_lines(3))
    (b / "notes\nerror    broker-9: FORGED disk failure.txt").write_text("some notes\n")
    (b / "server\r\nnot read FORGED.log").write_bytes(log_lines(2))
    (b / "tab\there\x0bvt.log").write_bytes(log_lines(1) + b"garbage line\n")
    (b / "empty.log").write_bytes(b"")
    (b / "empty.log.1.gz").write_bytes(gzip.compress(b""))
    (c / "broker-2").mkdir()
    (c / "broker-2" / "server.log").write_bytes(b"")


def big(root: Path) -> None:
    # a 512 MiB line without a newline, as a ~0.5 MB gzip
    b = root / "long-line" / "broker-1"
    b.mkdir(parents=True)
    with open(b / "server.log.gz", "wb") as fh:
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        fh.write(z.compress(log_lines(3)))
        block = b"x" * (16 * 1024 * 1024)
        for _ in range(32):
            fh.write(z.compress(block))
        fh.write(z.flush())
    # thousands of small files over many hosts
    m = root / "many-files"
    for h in range(40):
        d = m / f"broker-{h}"
        d.mkdir(parents=True)
        for i in range(50):
            (d / f"server.log.{i}").write_bytes(log_lines(3 + i % 5))
    # a big gzip: ~120 MB of log4j records
    g = root / "big-gzip" / "broker-1"
    g.mkdir(parents=True)
    chunk = log_lines(100_000)
    with gzip.open(g / "server.log.gz", "wb", compresslevel=1) as fh:
        for _ in range(12):
            fh.write(chunk)
    # the suite's sizes; the 100,000 (zip: 418 s, 315 MB; files: 465 s, 335 MB, linear in
    # the count) are measured by hand with many_member_zip/small_files, too long for every CI run
    many_member_zip(root, 20_000, "zip-20k")  # members read in the archive's order, each found in O(1)
    small_files(root, 20_000, "small-files-20k")  # memory by the data held, not the number of files
    tiny_lines(root)


def tiny_lines(root: Path, n: int = 10_000_000) -> None:
    """Ten million one-byte lines after a record header and an invalid UTF-8 line (so every one
    goes to unparsed, "follows an unreadable line"); a second file is a record whose continuation
    is ten million one-byte lines. Memory is bounded by the data held, not the number of lines."""
    b = root / "tiny-lines" / "broker-1"
    b.mkdir(parents=True)
    head = b"[2026-11-23 06:47:00,000] INFO start (kafka.server.KafkaServer)\n"
    (b / "server.log").write_bytes(head + b"\xff\n" + b"x\n" * n)
    (b / "controller.log").write_bytes(head + b"x\n" * n)


def secrets_chunks(root: Path) -> None:
    """Records that cross the readers' internal boundaries: a PEM private key block across line
    100,000 of a text file (the unparsed table is built 100,000 lines at a time), a key at the end
    of the second piece with its value on the first line of the third, and a PEM block in a log
    record just past the log4j reader's block size (CHUNK). Body lines are short, so only the
    BEGIN ... END state can mask them (not the rule for long base64 lines)."""
    from kitlib.formats import unknown_lines
    from kitlib.sources import CHUNK

    b = root / "secrets-chunks" / "broker-1"
    b.mkdir(parents=True)
    rows = unknown_lines.__defaults__[0]  # lines per piece of the unparsed table
    pem = [
        "-----BEGIN ENCRYPTED PRIVATE KEY-----",
        "AdvPemChunk0108a",
        "AdvPemChunk0109b",
        "AdvPemChunk0110c",
        "AdvPemChunk0111d",
        "-----END ENCRYPTED PRIVATE KEY-----",
    ]
    lines = [f"operator note {i}: nothing to see" for i in range(1, rows - 2)]  # BEGIN on line rows - 2
    lines += pem
    lines += [f"operator note {i}: nothing to see" for i in range(len(lines) + 1, 2 * rows)]
    lines += ["ssl.truststore.password:", "    AdvNextPiece0112"]  # key on line 2 * rows, value after
    lines += ["operator note: end"]
    (b / "notes-big.txt").write_text("\n".join(lines) + "\n")
    body = log_lines(CHUNK // 60)
    record = (
        "[2026-11-23 06:49:00,000] ERROR Could not load key material:\n"
        + "\n".join(pem)
        .replace("0108a", "0113a")
        .replace("0109b", "0114b")
        .replace("0110c", "0115c")
        .replace("0111d", "0116d")
        + "\n (x.Ssl)\n"
    )
    head = body[: body.rfind(b"\n", 0, CHUNK - 60) + 1]  # the record starts 60 bytes or less before the boundary
    (b / "server.log").write_bytes(head + record.encode() + log_lines(10))


def generate(out: str | os.PathLike, with_big: bool = False) -> Path:
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    for make in (
        codecs,
        links,
        unread,
        deep,
        zip_crc,
        deep_nest,
        special_files,
        nested_zips,
        symlink_fan_in,
        crafted_store,
        odd_names,
        secrets_chunks,
    ):
        make(root)
    many_member_zip(root, 2000, "zip-2000")
    if with_big:
        big(root)
    return root


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(generate(sys.argv[1], "--big" in sys.argv[2:]))
