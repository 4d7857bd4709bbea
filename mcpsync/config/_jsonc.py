"""JSON with comments and trailing commas (VS Code's JSONC), read as plain JSON first.

Only what config files need: ``//`` and ``/* */`` comments and a comma before ``}`` or ``]``
are dropped outside strings, then the text is parsed with :mod:`json`. A file that is valid
JSON is never rewritten; one that is neither raises the plain-JSON error.
"""

from __future__ import annotations

import json
from typing import Any, List

__all__ = ["parse_json", "strip_jsonc"]


def parse_json(text: str) -> Any:
    """JSON, or failing that JSON with comments and trailing commas (VS Code's JSONC)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a config file") from None
    except ValueError as exc:
        first = exc
    try:
        return json.loads(strip_jsonc(text))
    except (ValueError, RecursionError):
        raise first from None


def strip_jsonc(text: str) -> str:
    """Drop ``//`` and ``/* */`` comments and trailing commas outside strings."""
    out: List[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':  # a string is copied whole: what looks like a comment inside it is text
            end = _string_end(text, i + 1)
            out.append(text[i:end])
            i = end
        elif text.startswith(("//", "/*"), i):
            i = _comment_end(text, i)
        elif ch == "," and _closes(text, i + 1):
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """The index just past the quote that closes the string whose body starts at ``i`` (escapes
    skipped); the text's length when it never closes."""
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return n


def _comment_end(text: str, i: int) -> int:
    """The index just past the ``//`` or ``/* */`` comment starting at ``i`` (a line comment's end
    is its newline, which is kept)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    end = text.find("*/", i + 2)
    return len(text) if end < 0 else end + 2


def _closes(text: str, i: int) -> bool:
    """Whether the next character from ``i`` that is neither blank nor a comment closes an object or list."""
    j = _skip_blank(text, i)
    return j < len(text) and text[j] in "}]"


def _skip_blank(text: str, i: int) -> int:
    """The index of the next character that is neither whitespace nor inside a comment."""
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith(("//", "/*"), i):
            i = _comment_end(text, i)
        else:
            break
    return i
