"""Grant: a token and everything needed to use and renew it (the unit that is stored), and scope helpers.

Pure values: no I/O, no threads. A stored grant that cannot be read back
whole (a DPoP token without its key, a malformed entry) reads as None.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Set, Tuple

from ._dpop import DPoPKey
from ._registration import ClientIdentity
from ._tokens import Token

__all__ = ["Grant", "held_scopes", "max_authorizations_from", "union"]


@dataclass(frozen=True)
class Grant:
    """A token and everything needed to use and renew it (the unit that is stored)."""

    issuer: str
    resource: str
    token_endpoint: str
    client: ClientIdentity
    token: Token
    scopes: Optional[Tuple[str, ...]] = None  # what was asked for (the base of a step-up)
    dpop_key: Optional[DPoPKey] = None  # the key a DPoP token is bound to (kept with it)

    @property
    def dpop(self) -> bool:
        """Whether the token is DPoP-bound (sent as ``Authorization: DPoP`` with a proof)."""
        return self.token.token_type == "DPoP" and self.dpop_key is not None

    def header(self) -> str:
        return f"{'DPoP' if self.dpop else 'Bearer'} {self.token.access_token}"

    def to_dict(self) -> Dict[str, Any]:
        data = {"issuer": self.issuer, "resource": self.resource, "token_endpoint": self.token_endpoint,
                "client": self.client.to_dict(), "token": self.token.to_dict(),
                "scopes": list(self.scopes) if self.scopes is not None else None}
        if self.dpop_key is not None:
            data["dpop_key"] = self.dpop_key.to_jwk()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Optional["Grant"]:
        stored_client, stored_token = data.get("client"), data.get("token")  # a damaged file may hold anything
        client = ClientIdentity.from_dict(stored_client) if isinstance(stored_client, dict) else None
        token = Token.from_dict(stored_token) if isinstance(stored_token, dict) else None
        issuer, resource, endpoint = data.get("issuer"), data.get("resource"), data.get("token_endpoint")
        if client is None or token is None or not all(isinstance(v, str) for v in (issuer, resource, endpoint)):
            return None
        scopes = data.get("scopes")
        jwk = data.get("dpop_key")
        key = DPoPKey.from_jwk(jwk) if isinstance(jwk, dict) else None
        if token.token_type == "DPoP" and key is None:
            return None  # a DPoP token without its key cannot be used
        return cls(str(issuer), str(resource), str(endpoint), client, token,
                   tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else None, key)


def held_scopes(grant: Grant) -> Set[str]:
    """The scopes a grant's token holds: what the server said it granted, else what was asked for."""
    if grant.token.scope is not None:
        return set(grant.token.scope.split())
    return set(grant.scopes or ())


def max_authorizations_from(max_authorizations: int, max_step_ups: Optional[int]) -> int:
    """The limit from the public parameters: ``max_step_ups`` (deprecated) is the limit less the first authorization."""
    if max_step_ups is None:
        return max_authorizations
    warnings.warn("max_step_ups is deprecated: use max_authorizations (it counts the first authorization too, "
                  "so max_step_ups=n is max_authorizations=n+1)",
                  DeprecationWarning, stacklevel=4)  # points at the code that built the auth object
    return max_step_ups + 1


def union(*groups: Optional[Iterable[str]]) -> Tuple[str, ...]:
    seen: Dict[str, None] = {}
    for group in groups:
        for scope in group or ():
            seen.setdefault(scope, None)
    return tuple(seen)
