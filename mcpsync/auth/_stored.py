"""The grants of :class:`~mcpsync.auth._bearer.BearerAuth` in memory and in its token store: loaded
(once, by the index of the server URL's last grant), checked (issuer rule, client still us),
kept (written unless it is the stored one already), adopted from another process, forgotten.

A failing store is logged, never fatal: tokens then live in memory only.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import replace
from typing import Any, Dict, Iterator, Optional, Tuple

from ._binding import IssuerBinding
from ._dpop import DPoPKey
from ._grant import Grant
from ._registration import ClientIdentity
from ._tokens import TokenStore, client_key, server_key, tokens_key

__all__ = ["StoredGrants"]

log = logging.getLogger("mcpsync.auth")


class StoredGrants:
    """Mixin: the current grant and its token store entries.

    The renewal side (:class:`~mcpsync.auth._bearer.BearerAuth`) sets the attributes below
    and provides :meth:`_rule` (which issuers stored credentials may go to).
    """

    store: TokenStore
    server_url: Optional[str]
    dpop: bool
    _lock: threading.RLock
    _grant: Optional[Grant]
    _persisted: Optional[Grant]  # the grant known to be the stored one (read or written as it is)
    _loaded: bool
    _dpop_key: Optional[DPoPKey]

    def _rule(self) -> IssuerBinding:
        """Renewal side: the issuer rule stored grants are checked against."""
        raise NotImplementedError

    def logout(self) -> None:
        """Forget the tokens for this server, in memory and in the store (the registered client stays)."""
        with self._lock:
            keys = []
            if self.server_url is not None:
                last = self._last_used(self.server_url)
                if last is not None:
                    keys.append(tokens_key(*last))
                keys.append(server_key(self.server_url))
            if self._grant is not None:
                keys.append(tokens_key(self._grant.issuer, self._grant.resource))
            self._grant = None
            self._loaded = True
            for key in dict.fromkeys(keys):
                self._store_call("delete", key)

    def _load_last(self) -> None:
        """Load the tokens this server URL used last, once (no discovery needed)."""
        self._loaded = True
        last = self._last_used(self.server_url) if self.server_url is not None else None
        if last is not None:
            self._grant = self._load_grant(*last)

    def _last_used(self, server_url: str) -> Optional[Tuple[str, str]]:
        """(issuer, resource) of the grant ``server_url`` used last, from the store's index (None: none)."""
        index = self._store_call("load", server_key(server_url))
        if isinstance(index, dict) and isinstance(index.get("issuer"), str) and isinstance(index.get("resource"), str):
            return index["issuer"], index["resource"]
        return None

    def _load_grant(self, issuer: str, resource: str) -> Optional[Grant]:
        grant = self._parse_grant(self._store_call("load", tokens_key(issuer, resource)), issuer, resource)
        if grant is not None:
            self._persisted = grant
        return grant

    def _parse_grant(self, data: Any, issuer: str, resource: str) -> Optional[Grant]:
        """The stored grant in ``data`` if it is whole, from ``issuer`` and for a client that is still us."""
        grant = Grant.from_dict(data) if isinstance(data, dict) else None
        if grant is None or grant.issuer != issuer or grant.resource != resource:
            return None
        if not self._rule().allows(grant.issuer, self._load):
            log.info("Not using the stored tokens from %s: credentials here may not go to that issuer", issuer)
            return None
        client = self._accept_client(grant.client)
        if client is None:
            return None
        if grant.dpop_key is not None and self._dpop_key is None and self.dpop:
            self._dpop_key = grant.dpop_key  # keep proving with the key the stored tokens are bound to
        return replace(grant, client=client)

    def _accept_client(self, client: ClientIdentity) -> Optional[ClientIdentity]:
        """Subclass: the stored client if it is still who we are (with our secret), else None."""
        return client

    def _keep(self, grant: Grant) -> None:
        """Make ``grant`` the current one and store it."""
        self._grant = grant
        self._loaded = True
        if grant is not self._persisted:  # a refresh wrote its own answer (compare-and-swap); never again blindly
            self._store_call("save", tokens_key(grant.issuer, grant.resource), grant.to_dict())
            self._persisted = grant
        if self.server_url is not None:
            self._store_call("save", server_key(self.server_url), {"issuer": grant.issuer, "resource": grant.resource})
        if grant.client.source == "dcr":
            self._store_call("save", client_key(grant.issuer), grant.client.to_dict())

    def _store_call(self, method: str, *args: Any) -> Any:
        """A store method; a failing store is logged, never fatal (tokens stay in memory)."""
        try:
            return getattr(self.store, method)(*args)
        except Exception as exc:
            log.warning("Token store %s failed: %s", method, exc)
            return None

    def _load(self, key: str) -> Any:
        return self._store_call("load", key)

    def _save(self, key: str, value: Dict[str, Any]) -> Any:
        return self._store_call("save", key, value)

    def _adopt(self, grant: Grant, newer: Grant) -> Grant:
        """Take ``newer`` (read from the store) in place of ``grant``."""
        if self._grant == grant:
            self._grant = newer
        self._persisted = newer
        return newer

    @contextlib.contextmanager
    def _transaction(self, key: str) -> Iterator[None]:
        """The store's transaction for ``key``; a store that cannot give one is logged and done without."""
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self.store.transaction(key))
            except Exception as exc:
                log.warning("Token store transaction failed (%s); refreshing without it", exc)
            yield
