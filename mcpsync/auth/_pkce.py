"""PKCE (RFC 7636, S256 only) and the ``state`` value of one authorization request."""

from __future__ import annotations

import base64
import hashlib
import secrets

__all__ = ["challenge_s256", "new_state", "new_verifier"]


def new_verifier() -> str:
    """A fresh code verifier: 86 characters of the unreserved set (RFC 7636 §4.1 allows 43 to 128)."""
    return secrets.token_urlsafe(64)


def challenge_s256(verifier: str) -> str:
    """The S256 code challenge of ``verifier``: base64url(SHA-256(verifier)) without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_state() -> str:
    """An unguessable ``state`` that ties the redirect back to this request."""
    return secrets.token_urlsafe(32)
