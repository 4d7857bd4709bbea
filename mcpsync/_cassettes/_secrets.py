"""What never reaches a cassette file: credentials in headers, URLs, argv and messages.

The rule is by name: a header, query parameter, argument flag or JSON key whose name says it
holds a credential (``Authorization``, cookies, ``Mcp-Session-Id``, ``X-Api-Key``, ``*-Token``,
``*Secret*``, ``*Auth*``, passwords, OAuth ``code``/``code_verifier``/``client_secret``, DPoP
proofs) has its value replaced by :data:`FILTERED`; and by shape: ``Bearer ...`` strings, JWTs
(DPoP proofs and most OAuth tokens are JWTs) and URL query values that look like keys are
replaced wherever they appear. The same filter runs on what the client sends while replaying,
so a filtered value still matches its recording.
"""

from __future__ import annotations

import re
from typing import Any, Collection, Dict, List, Mapping, Optional
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

__all__ = ["FILTERED", "Filter"]

#: What a secret is replaced with.
FILTERED = "<filtered>"

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_WORDS = frozenset({
    "authorization", "auth", "authn", "authz", "cookie", "cookies", "token", "tokens", "secret", "secrets",
    "password", "passwd", "pwd", "passphrase", "credential", "credentials", "apikey", "dpop", "bearer", "jwt",
    "signature", "verifier", "assertion", "session", "sessionid", "privatekey",
})
#: Query parameter names that carry keys (besides the secret words above).
_KEY_PARAMS = frozenset({"key", "sig", "code", "state", "access_token", "api_key", "apikey"})
_NOT_SECRET = frozenset({"progressToken", "nextCursor", "cursor"})
_BEARER = re.compile(r"(?i)\b(bearer|dpop|basic)\s+[A-Za-z0-9._~+/=-]{6,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_KEYLIKE = re.compile(r"^[A-Za-z0-9_~+/=.-]{20,}$")


def _words(name: str) -> List[str]:
    return [word.lower() for word in _WORDS.findall(name)]


def secret_name(name: str) -> bool:
    """Whether a header, parameter or key called ``name`` holds a credential."""
    words = _words(name)
    if not words:
        return False
    joined = "".join(words)
    if joined in _SECRET_WORDS or joined in {"code", "clientsecret", "codeverifier", "refreshtoken"}:
        return True
    if any(word in _SECRET_WORDS or word.startswith(("authoriz", "authent")) for word in words):
        return True
    return any(a == "api" and b == "key" for a, b in zip(words, words[1:]))


def _keylike(value: str) -> bool:
    """A long random-looking token: letters and digits mixed, no spaces."""
    return bool(_KEYLIKE.match(value)) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


class Filter:
    """The secret filter of one cassette: the default rules plus ``headers`` and ``params`` names.

    ``headers`` are extra header (and argument flag) names to filter, case-insensitive;
    ``params`` extra JSON keys and URL query parameter names.
    """

    def __init__(self, headers: Collection[str] = (), params: Optional[Collection[str]] = None) -> None:
        self._headers = frozenset(name.lower() for name in headers)
        self._params = frozenset(name.lower() for name in (params or ()))

    def header(self, name: str) -> bool:
        return name.lower() in self._headers or secret_name(name)

    def key(self, name: str) -> bool:
        return name.lower() in self._params or secret_name(name)

    def headers(self, headers: Mapping[str, Any]) -> Dict[str, str]:
        """``headers`` with every credential's value filtered."""
        return {str(k): FILTERED if self.header(str(k)) else self.text(str(v)) for k, v in headers.items()}

    def url(self, url: str) -> str:
        """``url`` without user info, and with the values of key-like query parameters filtered."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return FILTERED
        netloc = parts.netloc.rsplit("@", 1)[-1]
        query = "&".join(
            f"{quote(k, safe='')}={FILTERED if self._query_secret(k, v) else quote(v, safe='')}"
            for k, v in parse_qsl(parts.query, keep_blank_values=True))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))

    def _query_secret(self, name: str, value: str) -> bool:
        return self.key(name) or name.lower() in _KEY_PARAMS or _keylike(value)

    def args(self, args: List[str]) -> List[str]:
        """argv with the values of credential flags (``--token X``, ``--api-key=X``) filtered."""
        out: List[str] = []
        hide_next = False
        for arg in args:
            if hide_next:
                out.append(FILTERED)
                hide_next = False
                continue
            if arg.startswith("-"):
                name, eq, _value = arg.lstrip("-").partition("=")
                if self.header(name) or self.key(name):
                    if eq:
                        out.append(arg.split("=", 1)[0] + "=" + FILTERED)
                    else:
                        out.append(arg)
                        hide_next = True
                    continue
            out.append(self.text(arg))
        return out

    def text(self, value: str) -> str:
        """A string with bearer credentials, JWTs and URL query keys in it filtered."""
        if "eyJ" in value:
            value = _JWT.sub(FILTERED, value)
        if " " in value:
            value = _BEARER.sub(lambda m: f"{m.group(1)} {FILTERED}", value)
        if "://" in value and "?" in value and " " not in value:
            value = self.url(value)
        return value

    def json(self, value: Any) -> Any:
        """A JSON value with every credential in it filtered (a new value; the old one is untouched)."""
        if isinstance(value, dict):
            return {k: FILTERED if isinstance(v, str) and self._key(k) else self.json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def _key(self, name: str) -> bool:
        # Only string values are filtered (a JSON-RPC error ``code`` or ``maxTokens`` is a number);
        # a progress token names a request, it grants nothing.
        return name not in _NOT_SECRET and self.key(name)
