"""``private_key_jwt`` client assertions (RFC 7523 §2.2), signed with PyJWT.

PyJWT and cryptography are an optional extra (``pip install
'mcpsync[oauth-jwt]'``), imported only here and only when a private key is
used; without them :func:`require` raises a clear :class:`~mcpsync.AuthError`.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Dict, Optional

from ..exceptions import AuthError

__all__ = ["ASSERTION_TYPE", "client_assertion", "require"]

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
LIFETIME = 300


def require() -> None:
    """Check that PyJWT with its cryptography backend is installed.

    Raises:
        AuthError: (``missing_dependency``) it is not, with the pip command that fixes it.
    """
    try:
        import cryptography  # noqa: F401
        import jwt  # noqa: F401
    except ImportError as exc:
        raise AuthError("Signing a private_key_jwt client assertion needs PyJWT and cryptography: "
                        "pip install 'mcpsync[oauth-jwt]'", error="missing_dependency") from exc


def client_assertion(client_id: str, audience: str, private_key: Any, algorithm: str,
                     key_id: Optional[str] = None) -> str:
    """A fresh signed assertion: ``iss`` = ``sub`` = the client id, ``aud`` = ``audience``, 5 minutes, unique ``jti``.

    ``private_key`` is a PEM string or bytes, or a ``cryptography`` private key.

    Raises:
        AuthError: (``invalid_key``) the key cannot sign with ``algorithm``.
    """
    require()
    import jwt

    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + LIFETIME,
              "jti": secrets.token_urlsafe(16)}
    headers: Optional[Dict[str, Any]] = {"kid": key_id} if key_id else None
    try:
        return jwt.encode(claims, private_key, algorithm=algorithm, headers=headers)
    except Exception as exc:  # PyJWT and cryptography raise several types; the key never goes into the text
        raise AuthError(f"Cannot sign the client assertion with {algorithm}: {type(exc).__name__} "
                        "(is the key a private key of that algorithm?)", error="invalid_key") from exc
