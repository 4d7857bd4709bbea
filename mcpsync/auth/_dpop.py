"""DPoP (RFC 9449): a proof-of-possession key, the proofs it signs, and the servers' nonces.

A :class:`DPoPKey` is a key pair and the JWS algorithm it signs proofs with:
ES256, ES384 or ES512 (P-256, P-384, P-521), EdDSA (Ed25519; also named by its
fully specified name ``Ed25519``), or RS256 or PS256 (RSA, 2048 bits or more).
Each HTTP request that uses a DPoP-bound token, and each token request that
asks for one, carries a fresh proof: a JWT whose header has ``typ: dpop+jwt``,
the ``alg`` and the public ``jwk``, and whose claims are ``jti`` (unique),
``htm`` (the method), ``htu`` (the URL without query and fragment), ``iat``,
``nonce`` (when the server gave one) and ``ath`` (the SHA-256 of the access
token, on resource requests).

Which algorithm: :func:`key_for` follows the authorization server's
``dpop_signing_alg_values_supported``. A key made here is made for the first of
:data:`PREFERENCE` the server lists (ES256 when it lists none); a key the user
supplied signs with an algorithm it can sign and the server lists, in the
server's order, or is refused before anything is sent.

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
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit, urlunsplit

from ..exceptions import AuthError

__all__ = ["ALGORITHM", "PREFERENCE", "Binding", "DPoPKey", "Nonces", "htu", "key_for", "require", "supplied_key"]

#: The algorithm of a key made when the server names none.
ALGORITHM = "ES256"
#: What a key made here may sign with, best first (small keys, fast signatures, then RSA).
PREFERENCE = ("ES256", "EdDSA", "Ed25519", "ES384", "ES512", "PS256", "RS256")
# JWK crv -> (curve name in cryptography, JWS algorithm, coordinate bytes, hash)
_CURVES = {"P-256": ("secp256r1", "ES256", 32, "SHA256"), "P-384": ("secp384r1", "ES384", 48, "SHA384"),
           "P-521": ("secp521r1", "ES512", 66, "SHA512")}
_BY_CURVE_NAME = {name: crv for crv, (name, _, _, _) in _CURVES.items()}
_RSA_MIN_BITS = 2048
_ED = ("EdDSA", "Ed25519")
_RSA = ("RS256", "PS256")
#: What ``dpop=`` takes: True (a key made on first use), False, a :class:`DPoPKey`, or a
#: ``cryptography`` private key (EC, Ed25519 or RSA).
DPoPSetting = Union[bool, "DPoPKey", Any]


def require() -> None:
    """Check that ``cryptography`` is installed.

    Raises:
        AuthError: (``missing_dependency``) it is not, with the pip command that fixes it.
    """
    try:
        import cryptography  # noqa: F401
    except ImportError as exc:
        raise AuthError("DPoP needs the cryptography package to make and use its key: "
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
    """A key pair for DPoP proofs and the algorithm it signs them with. Immutable; its ``repr``
    shows only the algorithm and the thumbprint.

    Make one with :meth:`generate`, bring your own with ``DPoPKey(private_key)`` or
    :meth:`from_pem`, or read a stored one with :meth:`from_jwk`. ``private_key`` is a
    ``cryptography`` EC (P-256, P-384, P-521), Ed25519 or RSA (2048 bits or more)
    private key; ``algorithm`` defaults to the first the key can sign
    (:attr:`algorithms`).

    Raises:
        AuthError: (``invalid_key``) another kind of key, or an algorithm it cannot sign.
    """

    def __init__(self, private_key: Any, algorithm: Optional[str] = None) -> None:
        self._key = private_key
        self._public, self.algorithms, self._hash, self._size = _describe(private_key)
        if algorithm is None:
            algorithm = self.algorithms[0]
        if algorithm not in self.algorithms:
            raise AuthError(f"This DPoP key ({self._public['kty']}) cannot sign {algorithm}; it signs "
                            f"{', '.join(self.algorithms)}", error="invalid_key")
        #: The JWS ``alg`` of its proofs.
        self.algorithm: str = algorithm

    @classmethod
    def generate(cls, algorithm: str = ALGORITHM) -> "DPoPKey":
        """A new random key for ``algorithm`` (one of :data:`PREFERENCE`).

        Raises:
            AuthError: ``missing_dependency`` without ``cryptography``; ``invalid_key`` for
                an algorithm mcpsync does not sign with.
        """
        require()
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        curve = next((name for name, alg, _, _ in _CURVES.values() if alg == algorithm), None)
        if curve is not None:
            return cls(ec.generate_private_key(getattr(ec, curve.upper())()), algorithm)
        if algorithm in _ED:
            return cls(ed25519.Ed25519PrivateKey.generate(), algorithm)
        if algorithm in _RSA:
            return cls(rsa.generate_private_key(public_exponent=65537, key_size=_RSA_MIN_BITS), algorithm)
        raise AuthError(f"mcpsync cannot make a DPoP key for {algorithm!r}; it signs with {', '.join(PREFERENCE)}",
                        error="invalid_key")

    @classmethod
    def from_pem(cls, data: Union[bytes, str], password: Optional[bytes] = None,
                 algorithm: Optional[str] = None) -> "DPoPKey":
        """The key in a PEM private key (PKCS #8 or the traditional formats).

        Raises:
            AuthError: ``invalid_key`` when it cannot be read or is not a usable key.
        """
        require()
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        try:
            key = load_pem_private_key(data.encode("ascii") if isinstance(data, str) else data, password)
        except (ValueError, TypeError) as exc:
            raise AuthError(f"The DPoP key is not a readable PEM private key ({type(exc).__name__})",
                            error="invalid_key") from None
        return cls(key, algorithm)

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> Optional["DPoPKey"]:
        """The key in a stored private JWK, or None when it is not a usable private key whose
        public members match it."""
        require()
        try:
            key = cls(_private_from_jwk(jwk), jwk.get("alg") if isinstance(jwk.get("alg"), str) else None)
        except (KeyError, ValueError, TypeError, AuthError):
            return None
        public = key.public_jwk
        return key if all(jwk.get(name) == value for name, value in public.items()) else None

    def with_algorithm(self, algorithm: str) -> "DPoPKey":
        """The same key signing with ``algorithm`` (an RSA key signs RS256 or PS256). Raises AuthError."""
        return self if algorithm == self.algorithm else DPoPKey(self._key, algorithm)

    def __repr__(self) -> str:
        return f"<DPoPKey {self.algorithm} thumbprint={self.thumbprint()}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DPoPKey) and other._public == self._public

    def __hash__(self) -> int:
        return hash(self.thumbprint())

    @property
    def public_jwk(self) -> Dict[str, str]:
        """The public key as a JWK with its required members only (what a proof carries)."""
        return dict(self._public)

    def to_jwk(self) -> Dict[str, str]:
        """The private key as a JWK, with its ``alg``, for the token store only (it holds the secret)."""
        return {**self._public, **_private_members(self._key, self._size), "alg": self.algorithm}

    def thumbprint(self) -> str:
        """The RFC 7638 JWK SHA-256 thumbprint (base64url): the ``jkt`` a server binds tokens to."""
        canonical = json.dumps(self._public, separators=(",", ":"), sort_keys=True)
        return _b64(hashlib.sha256(canonical.encode("ascii")).digest())

    def proof(self, method: str, url: str, *, access_token: Optional[str] = None,
              nonce: Optional[str] = None) -> str:
        """A fresh signed proof for one request (a new ``jti`` each call)."""
        header = {"typ": "dpop+jwt", "alg": self.algorithm, "jwk": self._public}
        claims: Dict[str, Any] = {"jti": secrets.token_urlsafe(16), "htm": method.upper(), "htu": htu(url),
                                  "iat": int(time.time())}
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        signing_input = ".".join(_b64(json.dumps(part, separators=(",", ":")).encode("utf-8"))
                                 for part in (header, claims))
        return f"{signing_input}.{_b64(self._sign(signing_input.encode('ascii')))}"

    def _sign(self, data: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

        kty = self._public["kty"]
        if kty == "OKP":
            signature: bytes = self._key.sign(data)
            return signature
        digest = getattr(hashes, self._hash)()
        if kty == "RSA":
            pad = padding.PKCS1v15() if self.algorithm == "RS256" else \
                padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32)  # RFC 7518 §3.5: salt = hash size
            rsa_signature: bytes = self._key.sign(data, pad, digest)
            return rsa_signature
        r, s = utils.decode_dss_signature(self._key.sign(data, ec.ECDSA(digest)))
        return r.to_bytes(self._size, "big") + s.to_bytes(self._size, "big")


def _describe(private_key: Any) -> Tuple[Dict[str, str], Tuple[str, ...], str, int]:
    """(public JWK, algorithms it signs, hash name, coordinate bytes) of a private key; AuthError if unusable."""
    require()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(private_key, ec.EllipticCurvePrivateKey) and private_key.curve.name in _BY_CURVE_NAME:
        crv = _BY_CURVE_NAME[private_key.curve.name]
        _, alg, size, digest = _CURVES[crv]
        numbers = private_key.public_key().public_numbers()
        return ({"kty": "EC", "crv": crv, "x": _b64(numbers.x.to_bytes(size, "big")),
                 "y": _b64(numbers.y.to_bytes(size, "big"))}, (alg,), digest, size)
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        raw = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": _b64(raw)}, _ED, "", 32
    if isinstance(private_key, rsa.RSAPrivateKey) and private_key.key_size >= _RSA_MIN_BITS:
        public = private_key.public_key().public_numbers()
        return {"kty": "RSA", "n": _b64(_int_bytes(public.n)), "e": _b64(_int_bytes(public.e))}, _RSA, "SHA256", 0
    raise AuthError("A DPoP key must be an EC (P-256, P-384 or P-521), Ed25519 or RSA (2048 bits or more) "
                    "private key", error="invalid_key")


def _int_bytes(value: int, size: int = 0) -> bytes:
    return value.to_bytes(size or max(1, (value.bit_length() + 7) // 8), "big")


def _private_members(key: Any, size: int) -> Dict[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {"d": _b64(_int_bytes(key.private_numbers().private_value, size))}
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return {"d": _b64(key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                            serialization.NoEncryption()))}
    n = key.private_numbers()
    return {name: _b64(_int_bytes(value)) for name, value in
            (("d", n.d), ("p", n.p), ("q", n.q), ("dp", n.dmp1), ("dq", n.dmq1), ("qi", n.iqmp))}


def _private_from_jwk(jwk: Mapping[str, Any]) -> Any:
    """The ``cryptography`` private key a private JWK holds (KeyError, ValueError, TypeError if it holds none)."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    def number(name: str) -> int:
        return int.from_bytes(_unb64(str(jwk[name])), "big")

    kty = jwk.get("kty")
    if kty == "EC":
        curve = getattr(ec, _CURVES[str(jwk.get("crv"))][0].upper())()
        public = ec.EllipticCurvePublicNumbers(number("x"), number("y"), curve)
        return ec.EllipticCurvePrivateNumbers(number("d"), public).private_key()
    if kty == "OKP" and jwk.get("crv") == "Ed25519":
        return ed25519.Ed25519PrivateKey.from_private_bytes(_unb64(str(jwk["d"])))
    if kty == "RSA":
        public_rsa = rsa.RSAPublicNumbers(number("e"), number("n"))
        return rsa.RSAPrivateNumbers(number("p"), number("q"), number("d"), number("dp"), number("dq"),
                                     number("qi"), public_rsa).private_key()
    raise ValueError("not a supported private JWK")


def supplied_key(dpop: DPoPSetting) -> Optional[DPoPKey]:
    """The key a ``dpop=`` setting supplies (None for True, False or None).

    Raises:
        AuthError: (``invalid_key``) a key that cannot sign DPoP proofs; ``missing_dependency``.
        TypeError: neither a bool nor a key.
    """
    if dpop is None or isinstance(dpop, bool):
        return None
    if isinstance(dpop, DPoPKey):
        return dpop
    require()
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(dpop, (ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey, rsa.RSAPrivateKey)):
        return DPoPKey(dpop)
    raise TypeError(f"dpop= takes True, False, a mcpsync.auth.DPoPKey or a cryptography private key, "
                    f"not {type(dpop).__name__}")


def key_for(current: Optional[DPoPKey], offered: Optional[Sequence[str]], supplied: bool, issuer: str) -> DPoPKey:
    """The key to ask ``issuer`` for DPoP-bound tokens with, given the algorithms it lists (None: it names none).

    ``current`` (the key in use, when there is one) is kept whenever it can sign an
    algorithm the server lists; a key made here is replaced by one made for the
    server, a ``supplied`` one never is.

    Raises:
        AuthError: (``unsupported_dpop_alg``) the server lists no algorithm the key can sign (a
            supplied key) or none mcpsync signs with.
    """
    if offered is None:
        return current if current is not None else DPoPKey.generate()
    kept = _kept(current, offered, supplied, issuer) if current is not None else None
    if kept is not None:
        return kept
    choices = [alg for alg in PREFERENCE if alg in offered]
    if not choices:
        raise AuthError(f"The authorization server {issuer} signs DPoP proofs only with "
                        f"{', '.join(offered) or 'nothing'}; mcpsync signs with {', '.join(PREFERENCE)}",
                        error="unsupported_dpop_alg")
    return DPoPKey.generate(choices[0])


def _kept(current: DPoPKey, offered: Sequence[str], supplied: bool, issuer: str) -> Optional[DPoPKey]:
    """``current`` (with an algorithm the server lists) when it can sign one; None: make a new key.

    Raises:
        AuthError: (``unsupported_dpop_alg``) a ``supplied`` key that signs none of them.
    """
    usable = [alg for alg in offered if alg in current.algorithms]
    if current.algorithm in usable:
        return current
    if usable:
        return current.with_algorithm(usable[0])
    if supplied:
        raise AuthError(f"The authorization server {issuer} accepts DPoP proofs signed with "
                        f"{', '.join(offered) or 'nothing'}; the DPoP key given signs only "
                        f"{', '.join(current.algorithms)}", error="unsupported_dpop_alg")
    return None


class Nonces:
    """The latest ``DPoP-Nonce`` each server (by origin) gave; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_origin: Dict[str, str] = {}

    @staticmethod
    def _origin(url: str) -> Optional[str]:
        """``scheme://host[:port]`` of ``url``, or None when it cannot be read (a metadata document's
        ``https://[::1/``, say): such a URL has no nonce, and its request fails where it is sent."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}"

    def get(self, url: str) -> Optional[str]:
        origin = self._origin(url)
        with self._lock:
            return self._by_origin.get(origin) if origin is not None else None

    def note(self, url: str, headers: Mapping[str, str]) -> Optional[str]:
        """Remember the ``DPoP-Nonce`` in a response's headers, if any (a printable value, at most 1 KiB)."""
        value = headers.get("DPoP-Nonce")
        if not isinstance(value, str) or not value or len(value) > 1024 or not value.isprintable():
            return None
        origin = self._origin(url)
        if origin is None:
            return None
        with self._lock:
            self._by_origin[origin] = value
        return value


class Binding:
    """A key and the nonces it signs with: what a token endpoint or a resource request needs for its proofs."""

    def __init__(self, key: DPoPKey, nonces: Nonces) -> None:
        self.key = key
        self.nonces = nonces

    def proof(self, method: str, url: str, access_token: Optional[str] = None) -> str:
        """A fresh proof for ``method url``, with the latest nonce that server gave."""
        return self.key.proof(method, url, access_token=access_token, nonce=self.nonces.get(url))
