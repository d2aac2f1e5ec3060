"""Finding the files of a bundle and reading their bytes (plain or compressed), never writing to
them. Each module holds one idea:

- :mod:`~kitlib.sources.files`: what a file of a bundle is (:class:`SourceFile`), a path not read
  (:class:`NotRead`), a read that broke (:class:`SourceError`), how much is read at a time.
- :mod:`~kitlib.sources.discover`: the data files of a bundle, with the host, timezone and
  layout of each (:func:`discover`, :func:`discover_all`, :func:`infer_host`).
- :mod:`~kitlib.sources.manifest`: the bundle manifest and timezone names, checked.
- :mod:`~kitlib.sources.walk`: walking a folder safely (symlinks, special files, any depth).
- :mod:`~kitlib.sources.archives`: zip archives read as folders, nested ones too; members opened
  with their CRC-32 checked.
- :mod:`~kitlib.sources.regular`: opening only regular files, never waiting on a pipe or device.
- :mod:`~kitlib.sources.decompress`: gzip, zstd, xz, bz2 and lz4 content, in bounded pieces.
- :mod:`~kitlib.sources.reading`: a file's content as bytes and lines, with limits
  (:func:`read_chunks`, :func:`head`, :func:`cap_lines`, :func:`count_lines`).
- :mod:`~kitlib.sources.names`: file names as a terminal may show them (:func:`shown`).
- :mod:`~kitlib.sources.output`: an output folder that leaves the bundle untouched
  (:func:`check_output`).

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "broker-1").mkdir()
    >>> _ = (d / "broker-1" / "server.log").write_text("x\\n")
    >>> [(f.rel, f.host) for f in discover(d)]
    [('broker-1/server.log', 'broker-1')]
"""

from kitlib.sources.archives import ARCHIVES_OPEN, MAX_ZIP_DEPTH, ZIP_MAGIC, close_archives
from kitlib.sources.decompress import MAGIC
from kitlib.sources.discover import KIND_FOLDERS, discover, discover_all, infer_host
from kitlib.sources.files import CHUNK, MAX_LINE, NotRead, SourceError, SourceFile
from kitlib.sources.manifest import MANIFESTS, ManifestError, check_tz, load_manifest
from kitlib.sources.names import shown
from kitlib.sources.output import check_output
from kitlib.sources.reading import CR_NOTE, CR_PROBE, cap_lines, count_lines, head, read_chunks
from kitlib.sources.regular import open_regular, special_kind
from kitlib.sources.walk import NOTES, SKIP_NAMES, SKIP_SUFFIXES, regular_files

__all__ = [
    "ARCHIVES_OPEN",
    "CHUNK",
    "CR_NOTE",
    "CR_PROBE",
    "KIND_FOLDERS",
    "MAGIC",
    "MANIFESTS",
    "MAX_LINE",
    "MAX_ZIP_DEPTH",
    "NOTES",
    "SKIP_NAMES",
    "SKIP_SUFFIXES",
    "ZIP_MAGIC",
    "ManifestError",
    "NotRead",
    "SourceError",
    "SourceFile",
    "cap_lines",
    "check_output",
    "check_tz",
    "close_archives",
    "count_lines",
    "discover",
    "discover_all",
    "head",
    "infer_host",
    "load_manifest",
    "open_regular",
    "read_chunks",
    "regular_files",
    "shown",
    "special_kind",
]
