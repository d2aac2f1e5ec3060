"""Everything the kit prints to a terminal goes through :func:`visible` (via :func:`say`): file
names, summaries, evidence and errors come from the bundle, and a log line or a file name can
hold escape sequences that clear the screen, move the cursor, forge lines (CR, BS) or write the
clipboard (OSC 52). Control characters are shown as escapes instead; ``\\n`` and ``\\t`` stay,
as they are the structure of the output. Secrets are masked too (:func:`kitlib.redact.redact_text`).

Example:
    >>> visible("ok\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\rforged")
    'ok\\\\x1b]52;c;ZWNobyBwd25lZA==\\\\x07\\\\rforged'
    >>> visible("a\\tb\\nc")
    'a\\tb\\nc'
"""

from __future__ import annotations

import re
import sys

# C0 controls but \t and \n, DEL, C1 controls, and the Unicode bidirectional overrides that make
# text display in another order than it is stored
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\b": "\\b", "\x1b": "\\x1b", "\x07": "\\x07", "\x0b": "\\v", "\x0c": "\\f"}
# lone surrogates: bytes of a non-UTF-8 file name kept by surrogateescape
_SURROGATE = re.compile("[\udc80-\udcff]")


def _show(m: re.Match) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def visible(text) -> str:
    """``text`` safe for a terminal: control characters as escapes (``\\x1b``, ``\\r``...),
    undecodable file-name bytes as ``\\xNN``, secrets masked; newlines and tabs kept."""
    from kitlib.redact import redact_text

    s = str(text)
    s = _SURROGATE.sub(lambda m: f"\\x{ord(m.group(0)) - 0xDC00:02x}", s)
    return _CONTROL.sub(_show, redact_text(s))


def one_line(text) -> str:
    """``text`` kept on one line: newlines and tabs shown as ``\\n`` and ``\\t`` (for a file name,
    a host name or an error quoted into a line of output, where a newline would print a forged
    line after it); :func:`visible` shows the other control characters when it is printed.

    Example:
        >>> one_line("notes\\nerror    forged.txt")
        'notes\\\\nerror    forged.txt'
    """
    return str(text).replace("\n", "\\n").replace("\t", "\\t")


def say(*parts, file=None, sep: str = " ", end: str = "\n") -> None:
    """``print`` for every message of the CLI: the text passes :func:`visible` first."""
    out = file if file is not None else sys.stdout
    out.write(visible(sep.join(str(p) for p in parts)) + end)
    out.flush()


class VisibleStream:
    """A text stream whose every write passes :func:`visible` (the CLI wraps stdout and stderr
    in it, so no command can print a raw control character or a secret)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(visible(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)
