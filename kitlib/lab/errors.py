"""The error every part of the lab raises when it cannot do what was asked."""

from __future__ import annotations


class LabError(RuntimeError):
    """The lab could not do what was asked; the message carries the relevant log lines."""
