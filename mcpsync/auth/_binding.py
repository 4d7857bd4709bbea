"""Where a configured credential may go: the issuer the user pinned, else the one it was first used with.

An MCP server's metadata names its authorization server, so a hostile (or
compromised) MCP server can name one of its own and collect the client
secret the user configured for the real one. Two rules stop that:

* ``issuer=`` pins the authorization server: discovery that names any other
  is refused before anything is sent to it;
* without a pin, a configured credential (a client secret, a workload or
  enterprise identity) is bound, trust on first use, to the issuer it is
  first used with; the binding is kept in the token store
  (``binding <credential>``), and another issuer is refused.

Both refusals are :class:`~mcpsync.AuthError` ``issuer_not_allowed``, naming
the issuer expected, the one the server named, and what to do. An
authorization-server migration (SEP-2352) is therefore refused for a pinned
or bound credential; a client without one (dynamic registration) follows the
server as before. Issuers compare as exact strings, a trailing ``/`` aside.

Pure logic over two store callables: no I/O of its own, no threads.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Callable, Dict, Optional

from ..exceptions import AuthError
from ._urls import check_url

__all__ = ["IssuerBinding", "binding_key", "secret_label"]

log = logging.getLogger("mcpsync.auth")

Load = Callable[[str], Any]
Save = Callable[[str, Dict[str, Any]], Any]


def binding_key(credential: str) -> str:
    """The store key of the binding of ``credential`` (a label from :func:`secret_label` or the like)."""
    return f"binding {credential}"


def secret_label(client_id: str, secret: str) -> str:
    """A stable label for a client secret: the client id and a short fingerprint (never the secret).

    The fingerprint keeps two clients of the same id at different servers
    (with different secrets) apart, so neither is refused for the other.
    """
    digest = hashlib.sha256(f"{client_id}\n{secret}".encode("utf-8")).hexdigest()[:16]
    return f"client {client_id} {digest}"


def _same(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class IssuerBinding:
    """The issuer rule of one auth object. Not thread-safe: used under the auth object's lock.

    Args:
        pinned: the ``issuer=`` the user gave (checked to be a safe URL), or None.
        credential: the store label of the configured credential to bind, or None when
            nothing configured needs binding (a public client, a private key).
        shown: how the credential is named in errors (``the client secret of 'my-app'``).

    Raises:
        ValueError: ``pinned`` is not an https URL (or http on loopback).
    """

    def __init__(self, pinned: Optional[str], credential: Optional[str], shown: str) -> None:
        if pinned is not None:
            try:
                check_url(pinned, "issuer")
            except AuthError as exc:
                raise ValueError(str(exc)) from exc
        self.pinned = pinned
        self.credential = credential
        self.shown = shown
        self._bound: Optional[str] = None  # remembered here too, for stores that fail

    def expected(self, load: Load) -> Optional[str]:
        """The issuer credentials may go to: the pinned one, else the bound one, else None (any)."""
        if self.pinned is not None:
            return self.pinned
        if self.credential is None:
            return None
        if self._bound is None:
            stored = load(binding_key(self.credential))
            if isinstance(stored, dict) and isinstance(stored.get("issuer"), str):
                self._bound = stored["issuer"]
        return self._bound

    def allows(self, issuer: str, load: Load) -> bool:
        """Whether ``issuer`` may be used (a stored grant from it, for instance); never raises."""
        expected = self.expected(load)
        return expected is None or _same(expected, issuer)

    def check(self, issuer: str, server_url: str, load: Load, save: Save, previous: Optional[str] = None) -> None:
        """Allow ``issuer`` (named by ``server_url``'s metadata) or raise; record a first binding.

        ``previous`` is the issuer discovery found before, when it found another
        (a migration), for the error text.

        Raises:
            AuthError: (``issuer_not_allowed``) ``issuer`` is not the pinned or bound one.
        """
        expected = self.expected(load)
        if expected is not None and not _same(expected, issuer):
            raise AuthError(self._refusal(issuer, server_url, expected, previous), error="issuer_not_allowed")
        if self.credential is None:
            return
        if self._bound is None or not _same(self._bound, issuer):
            log.info("Binding %s to the authorization server %s", self.shown, issuer)
            save(binding_key(self.credential), {"issuer": issuer})
        self._bound = issuer

    def _refusal(self, issuer: str, server_url: str, expected: str, previous: Optional[str]) -> str:
        if previous is not None and not _same(previous, issuer):
            text = (f"The MCP server {server_url} now names the authorization server {issuer!r} instead of "
                    f"{previous!r} (an authorization server migration)")
        else:
            text = f"The MCP server {server_url} names the authorization server {issuer!r}"
        if self.pinned is not None:
            why = f"this auth object is pinned to {expected!r} (issuer=)"
        else:
            why = f"{self.shown} was first used with {expected!r} and is bound to it"
        return (f"{text}, but {why}: refusing to authorize there, so no credential goes to it. If the move is "
                f"genuine (check with the server's operator), pass issuer={issuer!r}")
