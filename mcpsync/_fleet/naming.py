"""Qualified tool names: ``mcp_<server>_<tool>``, safe for model providers, unique and stable.

A name is lower-case, uses only ``[a-z0-9_-]`` (each run of other characters
becomes one ``_``) and has at most 64 characters; a longer one is cut and ends
with ``_`` and 8 hex digits of a hash of the original server and tool names.
Names are only ever looked up, never parsed back: the manager maps each one to
its (server, tool) pair.

Pure functions; safe from any thread.
"""

from __future__ import annotations

from .._log import getLogger
import re
from typing import Dict, Iterable, Optional, Set, Tuple

log = getLogger("mcpsync.manager")

MAX_LENGTH = 64
PREFIX = "mcp_"
_UNSAFE = re.compile(r"[^a-z0-9_-]+")

Pair = Tuple[str, str]


def _clean(part: str) -> str:
    return _UNSAFE.sub("_", part.lower()) or "_"


def _digest(server: str, tool: str) -> str:
    import hashlib  # only for a name too long or clashing: the command line's start-up skips it

    return hashlib.sha256(f"{server}\x00{tool}".encode("utf-8")).hexdigest()[:8]


def _with_suffix(name: str, suffix: str) -> str:
    return name[: MAX_LENGTH - len(suffix)] + suffix


def qualified_name(server: str, tool: str) -> str:
    """``mcp_<server>_<tool>`` cleaned and cut to 64 characters (before collision handling)."""
    name = f"{PREFIX}{_clean(server)}_{_clean(tool)}"
    if len(name) > MAX_LENGTH:
        name = _with_suffix(name, "_" + _digest(server, tool))
    return name


def assign(pairs: Iterable[Pair], warned: Optional[Set[Pair]] = None) -> Dict[Pair, str]:
    """Give every (server, tool) pair a unique qualified name.

    ``pairs`` come in precedence order (servers in config order, each server's
    tools in its own order). When two pairs clean to the same name, the earlier
    one keeps it and each later one gets ``_`` plus 8 hex digits of a hash of its
    own server and tool names, so the outcome depends only on the set of
    servers and tools, never on which server connected first. A collision is
    logged as a warning, once per pair when ``warned`` (a set updated in place)
    is given. A pair listed twice keeps its first name.
    """
    names: Dict[Pair, str] = {}
    taken: Dict[str, Pair] = {}
    later = []
    for pair in pairs:
        if pair in names:
            continue
        name = qualified_name(*pair)
        if name in taken:
            later.append((pair, name))
            names[pair] = ""  # placeholder keeps the pair's position and marks it seen
            continue
        taken[name] = pair
        names[pair] = name
    for pair, name in later:
        candidate = _with_suffix(name, "_" + _digest(*pair))
        counter = 2
        while candidate in taken:  # a second collision: practically never, but stay unique
            candidate = _with_suffix(name, f"_{_digest(*pair)}{counter}")
            counter += 1
        first = taken[name]
        if warned is None or pair not in warned:
            if warned is not None:
                warned.add(pair)
            log.warning("Tool name collision: %r (server %r) and %r (server %r) both make %r; "
                        "the second is named %r", first[1], first[0], pair[1], pair[0], name, candidate)
        taken[candidate] = pair
        names[pair] = candidate
    return names
