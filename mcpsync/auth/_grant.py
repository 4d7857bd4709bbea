"""Grant: a token and everything needed to use and renew it (the unit that is stored), and scope helpers.

Pure values: no I/O, no threads. A stored grant that cannot be read back
whole (a DPoP token without its key, a malformed entry) reads as None.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Set, Tuple, TypeVar

from ._dpop import DPoPKey
from ._registration import ClientIdentity
from ._tokens import Token

_T = TypeVar("_T")

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
        # A damaged file may hold anything: each part is read only from the type it must have.
        client = _from_object(ClientIdentity.from_dict, data.get("client"))
        token = _from_object(Token.from_dict, data.get("token"))
        issuer, resource, endpoint = data.get("issuer"), data.get("resource"), data.get("token_endpoint")
        if client is None or token is None or not all(isinstance(v, str) for v in (issuer, resource, endpoint)):
            return None
        key = _from_object(DPoPKey.from_jwk, data.get("dpop_key"))
        if token.token_type == "DPoP" and key is None:
            return None  # a DPoP token without its key cannot be used
        return cls(str(issuer), str(resource), str(endpoint), client, token, _strings(data.get("scopes")), key)


def _from_object(parse: Callable[[Dict[str, Any]], Optional[_T]], value: Any) -> Optional[_T]:
    """``parse(value)`` when ``value`` is a JSON object, else None."""
    return parse(value) if isinstance(value, dict) else None


def _strings(value: Any) -> Optional[Tuple[str, ...]]:
    """The strings of a JSON list (anything else in it dropped); None when ``value`` is not a list."""
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else None


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
