"""The ``WWW-Authenticate`` header: parse its challenges and read the Bearer one (RFC 9110 §11.6.1, RFC 6750 §3).

Pure string handling: no I/O, no threads. A malformed header never raises;
the parser takes what it can read and skips the rest.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

__all__ = ["Challenge", "parse_challenges"]

_TCHAR = frozenset("!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits)
_SPACE = " \t"


@dataclass(frozen=True)
class Challenge:
    """What a 401 or 403 asks for (the ``Bearer`` challenge's parameters).

    Attributes:
        error: ``invalid_token``, ``insufficient_scope``, ... or None.
        scopes: the ``scope`` parameter split on spaces, or None when absent.
        resource_metadata: the protected resource metadata URL (RFC 9728 §5.1), or None.
        error_description: the server's human-readable text, or None.
        dpop_error: the ``error`` of a ``DPoP`` challenge (``use_dpop_nonce``,
            ``invalid_dpop_proof``, ...), or None. The fields above come from the
            ``Bearer`` challenge, else from the ``DPoP`` one.
    """

    error: Optional[str] = None
    scopes: Optional[Tuple[str, ...]] = None
    resource_metadata: Optional[str] = None
    error_description: Optional[str] = None
    dpop_error: Optional[str] = None

    @classmethod
    def from_header(cls, value: Optional[str]) -> "Challenge":
        """The Bearer (else DPoP) challenge in a ``WWW-Authenticate`` value (empty if there is none)."""
        found = {scheme: params for scheme, params in reversed(parse_challenges(value or ""))
                 if scheme in ("bearer", "dpop")}  # reversed: the first challenge of a scheme wins
        params = found.get("bearer", found.get("dpop"))
        if params is None:
            return cls()
        scope = params.get("scope")
        return cls(
            error=_text(params, "error"),
            scopes=tuple(scope.split()) if scope is not None else None,
            resource_metadata=_text(params, "resource_metadata"),
            error_description=_text(params, "error_description"),
            dpop_error=_text(found.get("dpop", {}), "error"),
        )


def _text(params: Dict[str, str], name: str) -> Optional[str]:
    """A parameter's value; None when it is absent or empty."""
    return params.get(name) or None


def parse_challenges(value: str) -> List[Tuple[str, Dict[str, str]]]:
    """Every challenge in a ``WWW-Authenticate`` value: ``[(scheme, {param: value})]``.

    Schemes and parameter names are lower-cased; quoted values are unescaped;
    a ``token68`` (as in ``Basic abc==``) is skipped. The first occurrence of a
    parameter wins.
    """
    challenges: List[Tuple[str, Dict[str, str]]] = []
    params: Optional[Dict[str, str]] = None
    after_scheme = False  # a token68 may only follow the scheme directly
    i, n = 0, len(value)
    while i < n:
        char = value[i]
        if char in _SPACE:
            i += 1
            continue
        if char == ",":
            after_scheme = False
            i += 1
            continue
        start, i = i, _token_end(value, i)
        token = value[start:i]
        if not token:  # not a token: skip to the next separator
            i = _separator(value, i)
            continue
        j = _skip_space(value, i)
        if params is not None and _is_param(value, j):
            parsed, i = _param_value(value, _skip_space(value, j + 1))
            params.setdefault(token.lower(), parsed)
            after_scheme = False
            continue
        if params is not None and after_scheme:
            i = _separator(value, i)  # token68 (with its '=' padding)
            after_scheme = False
            continue
        params = {}
        challenges.append((token.lower(), params))
        after_scheme = True
    return challenges


def _token_end(value: str, i: int) -> int:
    """The index just past the token starting at ``i`` (``i`` itself: no token there)."""
    while i < len(value) and value[i] in _TCHAR:
        i += 1
    return i


def _separator(value: str, i: int) -> int:
    """The index of the next space or comma from ``i`` (the end: none)."""
    while i < len(value) and value[i] not in _SPACE + ",":
        i += 1
    return i


def _is_param(value: str, j: int) -> bool:
    """Whether the token before ``j`` names a parameter: an ``=`` that is not token68 padding."""
    return j < len(value) and value[j] == "=" and not _token68_padding(value, j)


def _skip_space(value: str, i: int) -> int:
    while i < len(value) and value[i] in _SPACE:
        i += 1
    return i


def _token68_padding(value: str, i: int) -> bool:
    """Whether the '=' at ``i`` is token68 padding: only '='s then the end or a comma follow."""
    while i < len(value) and value[i] == "=":
        i += 1
    i = _skip_space(value, i)
    return i >= len(value) or value[i] == ","


def _param_value(value: str, i: int) -> Tuple[str, int]:
    """A token or quoted-string starting at ``i``: (the value, the index after it)."""
    n = len(value)
    if i < n and value[i] == '"':
        out: List[str] = []
        i += 1
        while i < n and value[i] != '"':
            if value[i] == "\\" and i + 1 < n:
                i += 1
            out.append(value[i])
            i += 1
        return "".join(out), i + 1
    start = i
    while i < n and value[i] not in _SPACE + ",":
        i += 1
    return value[start:i], i
