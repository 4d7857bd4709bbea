"""Reading an HTML error page for its title or its text, in time linear in its length.

A server's error page is outside input: a page of ``<title>`` after ``<title>`` (or ``<`` after
``<``) with nothing closing them made the patterns this replaces try every opening against the
rest of the page, seconds of CPU per 64 KiB. These scans find each thing with ``str.find``, moving
only forward. Pure functions: no I/O.
"""

from __future__ import annotations

from typing import List, Optional

__all__ = ["element_content", "strip_hidden", "strip_tags"]

_ASCII_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_ASCII_LOWER_TEXT = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def element_content(raw: bytes, name: bytes, end: int) -> Optional[bytes]:
    """What lies between the first ``<name...>`` in ``raw[:end]`` and the ``</name`` after it
    (ASCII case ignored), or None when there is no such pair."""
    low = raw[:end].translate(_ASCII_LOWER)
    opening = low.find(b"<" + name)
    if opening < 0:
        return None
    start = low.find(b">", opening + 1 + len(name))
    if start < 0:
        return None
    closing = low.find(b"</" + name, start + 1)
    return None if closing < 0 else raw[start + 1:closing]


def strip_tags(text: str, replacement: str) -> str:
    """``text`` with every ``<...>`` (up to the first ``>``) replaced; a ``<`` never closed stays."""
    out: List[str] = []
    pos = 0
    while True:
        opening = text.find("<", pos)
        closing = text.find(">", opening + 1) if opening >= 0 else -1
        if closing < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:opening])
        out.append(replacement)
        pos = closing + 1


def strip_hidden(text: str, replacement: str) -> str:
    """``text`` with every ``<script ...>...</script>`` and ``<style ...>...</style>`` element replaced
    (ASCII case ignored; whitespace allowed before the closing ``>``)."""
    low = text.translate(_ASCII_LOWER_TEXT)
    out: List[str] = []
    pos = 0
    names = ["script", "style"]
    found = {name: _opening(low, name, 0) for name in names}
    while True:
        live = [(found[name], name) for name in names if found[name] >= 0]
        if not live:
            out.append(text[pos:])
            return "".join(out)
        opening, name = min(live)
        closed = _closing(low, name, opening + 1 + len(name))
        if closed < 0:  # never closed: no later one of this name closes either
            found[name] = -1
            continue
        out.append(text[pos:opening])
        out.append(replacement)
        pos = closed
        for other in names:
            if 0 <= found[other] < pos:
                found[other] = _opening(low, other, pos)


def _opening(low: str, name: str, start: int) -> int:
    """The index of the next ``<name`` not followed by a word character, or -1."""
    while True:
        index = low.find("<" + name, start)
        if index < 0:
            return -1
        after = index + 1 + len(name)
        if after >= len(low) or not (low[after].isalnum() or low[after] == "_"):
            return index
        start = index + 1


def _closing(low: str, name: str, start: int) -> int:
    """The index after the first ``</name`` + blanks + ``>`` from ``start``, or -1."""
    while True:
        index = low.find("</" + name, start)
        if index < 0:
            return -1
        after = index + 2 + len(name)
        while after < len(low) and low[after].isspace():
            after += 1
        if after < len(low) and low[after] == ">":
            return after + 1
        start = index + 1
