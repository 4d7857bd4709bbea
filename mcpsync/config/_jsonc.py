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
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif ch == ",":
            j = _skip_blank(text, i + 1)
            if j < n and text[j] in "}]":
                i += 1
                continue
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _skip_blank(text: str, i: int) -> int:
    """The index of the next character that is neither whitespace nor inside a comment."""
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            break
    return i
