# The compiled literal prefilter (_prefilter.c): what it takes and returns.
from typing import Any

def compile(literals: list[bytes], fold: bool, /) -> bytes: ...
def scan(
    table: bytes,
    offsets: Any,
    data: Any,
    valid: Any,
    offset: int,
    length: int,
    large: bool,
    out: Any,
    method: int = ...,
    /,
) -> int: ...
