"""Names a model API accepts, made from MCP tool names, and the map back.

One rule serves every API here: ``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``. It is what OpenAI
(Chat Completions and Responses) and Anthropic accept (``^[a-zA-Z0-9_-]{1,64}$``),
narrowed by Gemini's "starts with a letter or an underscore" (Gemini also takes dots and
colons, and 128 characters; using the common part gives a tool the same name in every API).

A name that already fits is kept. Any other becomes its ASCII form (accents folded), each
run of other characters one ``_``, cut, then ``_`` and 8 hex digits of a SHA-256 of the
original name. The mapped name depends on the tool's name alone, never on its neighbours
or on the order tools arrive in, so it stays the same across refreshes and conversations.

Pure functions, plus :class:`NameMap`, which is built once and then only read: safe from
any thread.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Dict, Generic, Iterable, List, Optional, Tuple, TypeVar

__all__ = ["FUNCTION_NAME", "PARAMETER_NAME", "NameMap", "safe_name"]

T = TypeVar("T")

# (what a whole name must match, what a run of refused characters is found by, how long a name may be)
Rule = Tuple["re.Pattern[str]", "re.Pattern[str]", int]

FUNCTION_NAME: Rule = (re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}"), re.compile(r"[^A-Za-z0-9_-]+"), 64)
"""Tool names, for all four APIs."""

PARAMETER_NAME: Rule = (re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}"), re.compile(r"[^A-Za-z0-9_]+"), 64)
"""Gemini's rule for the top-level parameter names of a function (no dashes)."""

_DIGITS = 8


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:_DIGITS]


def safe_name(name: str, rule: Rule = FUNCTION_NAME) -> str:
    """``name`` if ``rule`` accepts it, else its stable replacement (see the module docstring)."""
    whole, refused, limit = rule
    if whole.fullmatch(name):
        return name
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    cleaned = refused.sub("_", folded).strip("_")
    if not cleaned:
        cleaned = "tool"
    elif not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "t_" + cleaned
    suffix = "_" + _digest(name)
    return cleaned[: limit - len(suffix)] + suffix


class NameMap(Generic[T]):
    """Model-facing names for a list of items, and each name back to its item.

    ``entries`` are ``(wanted name, item)`` pairs; the wanted names are unique (a server's
    tool names, or a manager's qualified names). Each gets :func:`safe_name`; in the
    practically impossible case that a replacement equals a name already taken, the later
    one gets a counter, so the map is always one to one.
    """

    def __init__(self, entries: Iterable[Tuple[str, T]], rule: Rule = FUNCTION_NAME) -> None:
        listed = list(entries)
        assigned: Dict[int, str] = {}
        self._by_name: Dict[str, T] = {}
        for position, (wanted, item) in enumerate(listed):  # names that fit keep themselves first
            if safe_name(wanted, rule) == wanted and wanted not in self._by_name:
                assigned[position] = wanted
                self._by_name[wanted] = item
        for position, (wanted, item) in enumerate(listed):
            if position in assigned:
                continue
            candidate, counter = safe_name(wanted, rule), 2
            while candidate in self._by_name:
                candidate = safe_name(f"{wanted}\x00{counter}", rule)
                counter += 1
            assigned[position] = candidate
            self._by_name[candidate] = item
        self._names: List[Tuple[str, T]] = [(assigned[i], item) for i, (_, item) in enumerate(listed)]

    def get(self, name: str) -> Optional[T]:
        """The item a model-facing name stands for, or None."""
        return self._by_name.get(name)

    def items(self) -> List[Tuple[str, T]]:
        """``(model-facing name, item)`` pairs, in the order given."""
        return list(self._names)

    def names(self) -> List[str]:
        return [name for name, _ in self._names]
