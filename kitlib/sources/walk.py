"""Walking a bundle folder: every regular file once, symlinks followed only inside the bundle,
special files and loops listed as not read, any depth."""

from __future__ import annotations

import errno
import heapq
import os
import stat
from pathlib import Path

from kitlib.sources.files import NotRead
from kitlib.sources.manifest import MANIFESTS
from kitlib.sources.names import shown
from kitlib.sources.regular import special_kind

# files a bundle may hold that are not data (manifests, notes, our own ingest output)
NOTES = {"README.md", "PROVENANCE.md", ".DS_Store", "summary.json"}
SKIP_NAMES = set(MANIFESTS) | NOTES
SKIP_SUFFIXES = (".parquet",)


def walk(root: Path, skipped: list[NotRead]) -> list[tuple[Path, str]]:
    """(path to open, path relative to root) for every regular file under root, each real file
    once. The tree is walked with a stack (any depth); symlinks are resolved after every real
    path is known, so a link to a file or folder read under its own name is listed as a link
    (``link to X, read once there``), never read twice; hard links are read once too (by
    ``st_dev``/``st_ino``)."""
    real_root = os.path.realpath(root)
    found: list[tuple[Path, str]] = []
    read_as: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) of each file read -> its rel
    # (st_dev, st_ino) of each folder walked -> its rel (by identity: a real path would be resolved
    # component by component, which costs the square of the depth on a deep tree)
    root_st = os.stat(root)
    folder_as: dict[tuple[int, int], str] = {(root_st.st_dev, root_st.st_ino): ""}
    folders: list[tuple[str, str]] = [(str(root), "")]  # to walk: (path, rel)
    links: list[tuple[str, str]] = []  # symlinks met (a heap by rel), resolved last

    def inside(real: str) -> bool:
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    def listed_by_name(rel: str, name: str) -> bool:
        if "/" not in rel and name in MANIFESTS:
            return True  # the manifest itself: read by load_manifest
        if name in NOTES or name in MANIFESTS:
            skipped.append(NotRead(shown(rel), "bundle notes or kit output, not log data"))
            return True
        if name.endswith(SKIP_SUFFIXES):
            skipped.append(NotRead(shown(rel), "Parquet table (kit output), not log data"))
            return True
        return False

    def take(path: str, rel: str, st: os.stat_result, via_link: bool) -> None:
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in folder_as:
                there = folder_as[key]
                holds = rel == there or rel.startswith(there + "/") or not there
                why = (
                    "symlink loop (a link to a folder that holds it)"
                    if holds
                    else f"link to {shown(there)}, read once there"
                )
                skipped.append(NotRead(shown(rel), why))
                return
            folder_as[key] = rel
            folders.append((path, rel))
            return
        if not stat.S_ISREG(st.st_mode):
            skipped.append(NotRead(shown(rel), f"not a regular file (a {special_kind(st.st_mode)}): never opened"))
            return
        key = (st.st_dev, st.st_ino)
        if key in read_as:
            how = "link to" if via_link else "hard link to"
            skipped.append(NotRead(shown(rel), f"{how} {shown(read_as[key])}, read once there"))
            return
        if not os.access(path, os.R_OK):
            skipped.append(NotRead(shown(rel), "cannot be read: permission denied"))
            return
        read_as[key] = rel
        found.append((Path(path), rel))

    while folders or links:
        if not folders:  # every real folder is walked: resolve the next link
            rel, path = heapq.heappop(links)
            try:
                real = os.path.realpath(path, strict=True)
            except OSError as err:
                loop = "loop" in str(err).lower() or err.errno == errno.ELOOP
                why = "symlink loop" if loop else "dangling symlink (its target does not exist)"
                skipped.append(NotRead(shown(rel), why))
                continue
            if not inside(real):
                skipped.append(NotRead(shown(rel), "symlink to a path outside the bundle: not followed"))
                continue
            try:
                st = os.stat(real)
            except OSError as err:
                skipped.append(NotRead(shown(rel), f"cannot be examined: {err.strerror or err}"))
                continue
            take(real, rel, st, via_link=True)
            continue
        d, rel_dir = folders.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            skipped.append(NotRead(shown(rel_dir or "."), f"folder cannot be read: {err.strerror or err}"))
            continue
        at = len(folders)
        for e in entries:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            if e.name.startswith("."):
                skipped.append(NotRead(shown(rel), "hidden (its name starts with a dot)"))
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as err:
                skipped.append(NotRead(shown(rel), f"cannot be examined: {err.strerror or err}"))
                continue
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                if listed_by_name(rel, e.name):
                    continue
            if stat.S_ISLNK(st.st_mode):
                heapq.heappush(links, (rel, e.path))
                continue
            take(e.path, rel, st, via_link=False)
        folders[at:] = folders[at:][::-1]  # this folder's subfolders are walked in name order
    return found


def regular_files(root: Path) -> list[Path]:
    """Every regular file under the folder ``root`` that :func:`discover_all` would read (any
    depth, each real file once; hidden paths, notes and special files left out)."""
    return [p for p, _ in walk(Path(root), [])]
