"""Build the adversarial cases that cannot be kept in git as plain files, and the big ones.

    python tests/adversarial/generate.py OUT [--big]

Every case is a bundle folder ``OUT/<case>``; files the kit must not read from outside a bundle
go to ``OUT/outside``. All content is synthetic (made here), in the shapes Kafka writes.
"""

from __future__ import annotations

import bz2
import gzip
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
    record just past the 6 MiB block size of the log4j reader. Body lines are short, so only the
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
    for make in (codecs, links, unread, deep, secrets_chunks):
        make(root)
    if with_big:
        big(root)
    return root


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(generate(sys.argv[1], "--big" in sys.argv[2:]))
