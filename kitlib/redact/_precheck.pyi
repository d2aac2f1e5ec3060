# The compiled secret pre-check over columns (_precheck.c): what it takes and returns.
from typing import Any

def suspects(offsets: Any, data: Any, valid: Any, offset: int, length: int, large: bool, /) -> bytes: ...
