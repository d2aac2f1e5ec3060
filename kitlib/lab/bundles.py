"""What a scenario writes into its bundle besides what it captured: each host's log files
(:func:`collect_logs`), this machine's paths replaced by a neutral one (:func:`scrub_paths`) and
bundle.yaml (:func:`write_manifest`). PROVENANCE.md is written by :mod:`kitlib.lab.provenance`."""

from __future__ import annotations

import gzip
from pathlib import Path

from .folders import work_root
from .jars import jars_dir
from .processes import Proc

NEUTRAL_ROOT = "/var/lib/kafka-lab"


def scrub_paths(bundle: str | Path, roots: list[str | Path] | None = None) -> int:
    """Replace this machine's lab folders in a captured bundle's text (log lines name data dirs,
    config files and connector source files) with a neutral ``/var/lib/kafka-lab``; plain and
    gzipped files. Returns the number of files changed. Line structure is unchanged."""
    folders = sorted(
        {str(Path(r).resolve()) for r in (*(roots or []), work_root(), jars_dir())}, key=len, reverse=True
    )  # the most specific folder first
    changed = 0
    for f in Path(bundle).rglob("*"):
        if not f.is_file() or f.suffix in (".parquet",):
            continue
        raw = f.read_bytes()
        gz = raw[:2] == b"\x1f\x8b"
        data = gzip.decompress(raw) if gz else raw
        new = data
        for r in folders:
            new = new.replace(r.encode(), NEUTRAL_ROOT.encode())
        if new != data:
            f.write_bytes(gzip.compress(new, 9, mtime=0) if gz else new)
            changed += 1
    return changed


def write_manifest(bundle: str | Path, **hosts: str) -> Path:
    """Finish a scenario bundle: scrub this machine's paths (:func:`scrub_paths`) and write a
    bundle.yaml naming the host of the capture/probe folders (``live`` -> ``cluster``,
    ``probes`` -> ``clients``) so they do not show up as hosts of their own."""
    scrub_paths(bundle)
    lines = ["# hosts of folders that are not brokers or workers", "files:"]
    mapping = {"live/*": "cluster", "probes/*": "clients", "payloads/*": "clients"}
    mapping.update({f"{k}/*": v for k, v in hosts.items()})
    lines += [f'  "{k}": {v}' for k, v in mapping.items()]
    path = Path(bundle) / "bundle.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def collect_logs(
    proc: Proc, dest: str | Path, names: tuple[str, ...] | None = None, gzip_over: int = 1_000_000
) -> list[Path]:
    """Copy a lab process's log files into a bundle folder (``dest`` = the host's folder).
    Files bigger than ``gzip_over`` bytes are stored gzipped, as rotated logs often are."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for f in sorted(Path(proc.logs).iterdir()):
        if not f.is_file() or (names and f.name not in names) or f.stat().st_size == 0:
            continue
        data = f.read_bytes()
        if len(data) > gzip_over:
            target = dest / (f.name + ".gz")
            target.write_bytes(gzip.compress(data, 9, mtime=0))
        else:
            target = dest / f.name
            target.write_bytes(data)
        out.append(target)
    return out
