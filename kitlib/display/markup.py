"""The two pieces every HTML block of the kit is made of: :func:`esc` (log text is never trusted)
and :class:`HTML` (a rich-display object with a plain-text fallback)."""

from __future__ import annotations

import html


def esc(text) -> str:
    """HTML-escape any value (log text is never trusted)."""
    return html.escape("" if text is None else str(text), quote=True)


class HTML:
    """Minimal rich-display object (text/html + a plain-text fallback)."""

    def __init__(self, html_text: str, text: str = ""):
        self.html, self.text = html_text, text

    def _repr_html_(self):
        return self.html

    def __repr__(self):
        return self.text or "<html output>"
