# The compiled cuts of fixed wordings (_cut.c): what they take and return.
from typing import Any

def lead(
    offsets: Any, data: Any, valid: Any, offset: int, length: int, large: bool, lead: bytes, /
) -> tuple[bytes, bytes, bytes, int]: ...
def steps(
    offsets: Any, data: Any, valid: Any, offset: int, length: int, large: bool, steps: list[tuple[bytes, bool, bool]], /
) -> tuple[list[tuple[bytes, bytes, bytes, int]], int]: ...
def newlines(offsets: Any, data: Any, valid: Any, offset: int, length: int, large: bool, /) -> bytes: ...
