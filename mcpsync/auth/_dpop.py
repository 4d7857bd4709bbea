"""DPoP (RFC 9449): a proof-of-possession key, the proofs it signs, and the servers' nonces.

A :class:`DPoPKey` is an ES256 (P-256) key pair. Each HTTP request that uses
a DPoP-bound token, and each token request that asks for one, carries a fresh
proof: a JWT whose header has ``typ: dpop+jwt``, ``alg: ES256`` and the public
``jwk``, and whose claims are ``jti`` (unique), ``htm`` (the method), ``htu``
(the URL without query and fragment), ``iat``, ``nonce`` (when the server gave
one) and ``ath`` (the SHA-256 of the access token, on resource requests).

The key is made with ``cryptography``, an optional extra
(``pip install 'mcpsync[oauth-jwt]'``), imported only here and only when DPoP
is used; without it :func:`require` raises a clear :class:`~mcpsync.AuthError`.
The private key travels nowhere: it is kept with the tokens it is bound to,
in the token store, and never appears in a ``repr`` or a log line.

Thread safety: a key may sign from any number of threads at once; a
:class:`Nonces` is guarded by its own lock. Nothing here blocks or does I/O.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from typing import Any, Dict, Mapping, Optional
from urllib.parse import urlsplit, urlunsplit

from ..exceptions import AuthError

__all__ = ["ALGORITHM", "Binding", "DPoPKey", "Nonces", "htu", "require"]

ALGORITHM = "ES256"
_CURVE_BYTES = 32


def require() -> None:
    """Check that ``cryptography`` is installed.

    Raises:
        AuthError: (``missing_dependency``) it is not, with the pip command that fixes it.
    """
    try:
        import cryptography  # noqa: F401
    except ImportError as exc:
        raise AuthError("DPoP needs the cryptography package to make its ES256 key: "
                        "pip install 'mcpsync[oauth-jwt]'", error="missing_dependency") from exc


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def htu(url: str) -> str:
    """The ``htu`` claim for ``url``: the URL without its query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", "", ""))


def access_token_hash(access_token: str) -> str:
    """The ``ath`` claim: base64url of the SHA-256 of the access token's ASCII bytes."""
    return _b64(hashlib.sha256(access_token.encode("ascii", "replace")).digest())


class DPoPKey:
    """An ES256 key pair for DPoP proofs. Immutable; its ``repr`` shows only the thumbprint.

    Make one with :meth:`generate`, or read a stored one with :meth:`from_jwk`.
    """

    def __init__(self, private_key: Any) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec

        if not isinstance(private_key, ec.EllipticCurvePrivateKey) or private_key.curve.name != "secp256r1":
            raise AuthError("A DPoP key must be a P-256 elliptic curve private key (ES256)", error="invalid_key")
        self._key = private_key
        numbers = private_key.public_key().public_numbers()
        self._public: Dict[str, str] = {
            "kty": "EC", "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(_CURVE_BYTES, "big")),
            "y": _b64(numbers.y.to_bytes(_CURVE_BYTES, "big")),
        }

    @classmethod
    def generate(cls) -> "DPoPKey":
        """A new random key. Raises AuthError (``missing_dependency``) without ``cryptography``."""
        require()
        from cryptography.hazmat.primitives.asymmetric import ec

        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> Optional["DPoPKey"]:
        """The key in a stored private JWK, or None when it is not a usable P-256 private key."""
        require()
        from cryptography.hazmat.primitives.asymmetric import ec

        try:
            if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
                return None
            x, y, d = (int.from_bytes(_unb64(str(jwk[name])), "big") for name in ("x", "y", "d"))
            key = cls(ec.EllipticCurvePrivateNumbers(d, ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()))
                      .private_key())
        except (KeyError, ValueError, TypeError, AuthError):
            return None
        return key if key._public["x"] == jwk.get("x") and key._public["y"] == jwk.get("y") else None

    def __repr__(self) -> str:
        return f"<DPoPKey ES256 thumbprint={self.thumbprint()}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DPoPKey) and other._public == self._public

    def __hash__(self) -> int:
        return hash(self.thumbprint())

    @property
    def public_jwk(self) -> Dict[str, str]:
        """The public key as a JWK (``kty``, ``crv``, ``x``, ``y``)."""
        return dict(self._public)

    def to_jwk(self) -> Dict[str, str]:
        """The private key as a JWK, for the token store only (it holds the secret ``d``)."""
        d = self._key.private_numbers().private_value.to_bytes(_CURVE_BYTES, "big")
        return {**self._public, "d": _b64(d)}

    def thumbprint(self) -> str:
        """The RFC 7638 JWK SHA-256 thumbprint (base64url): the ``jkt`` a server binds tokens to."""
        canonical = json.dumps({k: self._public[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"),
                               sort_keys=True)
        return _b64(hashlib.sha256(canonical.encode("ascii")).digest())

    def proof(self, method: str, url: str, *, access_token: Optional[str] = None,
              nonce: Optional[str] = None) -> str:
        """A fresh signed proof for one request (a new ``jti`` each call)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils

        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self._public}
        claims: Dict[str, Any] = {"jti": secrets.token_urlsafe(16), "htm": method.upper(), "htu": htu(url),
                                  "iat": int(time.time())}
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        signing_input = ".".join(_b64(json.dumps(part, separators=(",", ":")).encode("utf-8"))
                                 for part in (header, claims))
        der = self._key.sign(signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        r, s = utils.decode_dss_signature(der)
        signature = r.to_bytes(_CURVE_BYTES, "big") + s.to_bytes(_CURVE_BYTES, "big")
        return f"{signing_input}.{_b64(signature)}"


class Nonces:
    """The latest ``DPoP-Nonce`` each server (by origin) gave; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_origin: Dict[str, str] = {}

    @staticmethod
    def _origin(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}"

    def get(self, url: str) -> Optional[str]:
        with self._lock:
            return self._by_origin.get(self._origin(url))

    def note(self, url: str, headers: Mapping[str, str]) -> Optional[str]:
        """Remember the ``DPoP-Nonce`` in a response's headers, if any (a printable value, at most 1 KiB)."""
        value = headers.get("DPoP-Nonce")
        if not value or len(value) > 1024 or not value.isprintable():
            return None
        with self._lock:
            self._by_origin[self._origin(url)] = value
        return value


class Binding:
    """A key and the nonces it signs with: what a token endpoint or a resource request needs for its proofs."""

    def __init__(self, key: DPoPKey, nonces: Nonces) -> None:
        self.key = key
        self.nonces = nonces

    def proof(self, method: str, url: str, access_token: Optional[str] = None) -> str:
        """A fresh proof for ``method url``, with the latest nonce that server gave."""
        return self.key.proof(method, url, access_token=access_token, nonce=self.nonces.get(url))
