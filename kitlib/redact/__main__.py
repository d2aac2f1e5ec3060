"""``python -m kitlib.redact``: prints the rule set as Markdown (``docs/redaction.md``)."""

from kitlib.redact.docs import markdown

print(markdown(), end="")
