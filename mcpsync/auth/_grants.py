"""Token endpoint requests: the authorization code, refresh token and client credentials grants.

Each request carries the ``resource`` indicator (RFC 8707) and authenticates
the client as the server expects: HTTP Basic (``client_secret_basic``), form
fields (``client_secret_post``), the client id alone (``none``) or a signed
assertion (``private_key_jwt``). Secrets travel only in the POST body or the
``Authorization`` header of the request to the token endpoint.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import quote

from ..exceptions import AuthError
from ._dpop import Binding
from ._errors import server_error
from ._fetch import Fetcher
from ._jwt import ASSERTION_TYPE
from ._registration import ClientIdentity
from ._tokens import Token

__all__ = ["JWT_BEARER_GRANT", "Signer", "TokenEndpoint"]

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"

log = logging.getLogger("mcpsync.auth")

Signer = Callable[[str], str]
"""Makes a ``private_key_jwt`` assertion for an audience (the authorization server's issuer)."""


class TokenEndpoint:
    """One authorization server's token endpoint, used by one client.

    Args:
        url: the token endpoint.
        issuer: the authorization server's issuer (the audience of a client assertion).
        client: who we are to it.
        signer: makes ``private_key_jwt`` assertions (only for that method).
        dpop: the DPoP key (and nonces) to ask for key-bound tokens with: each
            request then carries a fresh proof, and a ``use_dpop_nonce`` answer
            is retried once with the nonce the server gave (RFC 9449 §8).
    """

    def __init__(self, url: str, issuer: str, client: ClientIdentity, signer: Optional[Signer] = None,
                 dpop: Optional[Binding] = None) -> None:
        self.url = url
        self.issuer = issuer
        self.client = client
        self.signer = signer
        self.dpop = dpop

    def authorization_code(self, fetch: Fetcher, *, code: str, verifier: str, redirect_uri: str,
                           resource: str) -> Token:
        """Redeem an authorization code (with its PKCE verifier). Raises like :meth:`request`."""
        return self.request(fetch, {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                                    "code_verifier": verifier, "resource": resource},
                            "Exchanging the authorization code", [code, verifier])

    def refresh(self, fetch: Fetcher, token: Token, resource: str) -> Token:
        """Use ``token``'s refresh token; the answer may or may not carry a new one. Raises like :meth:`request`."""
        if not token.refresh_token:
            raise AuthError("No refresh token to use", error="invalid_grant")
        return self.request(fetch, {"grant_type": "refresh_token", "refresh_token": token.refresh_token,
                                    "resource": resource},
                            "Refreshing the access token", [token.refresh_token, token.access_token],
                            previous_refresh=token.refresh_token)

    def client_credentials(self, fetch: Fetcher, *, scope: Optional[str], resource: str) -> Token:
        """The client credentials grant (no user). Raises like :meth:`request`."""
        form = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            form["scope"] = scope
        return self.request(fetch, form, "The client credentials grant", [])

    def jwt_bearer(self, fetch: Fetcher, *, assertion: str, scope: Optional[str], resource: str,
                   what: str = "The JWT bearer grant") -> Token:
        """The RFC 7523 JWT bearer grant: ``assertion`` (a workload token, an ID-JAG) for an access token.

        The client still authenticates as usual (its secret, or its id alone).
        Raises like :meth:`request`.
        """
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion, "resource": resource}
        if scope:
            form["scope"] = scope
        return self.request(fetch, form, what, [assertion])

    def request(self, fetch: Fetcher, form: Dict[str, str], what: str, secrets: List[Optional[str]],
                previous_refresh: Optional[str] = None) -> Token:
        """POST ``form`` with the client's authentication and read the token answer.

        Raises:
            AuthError: the server refused (``.error`` is its OAuth error code), or
                answered without a bearer ``access_token``.
            ConnectError, TransportError, RequestTimeout: the request failed.
        """
        client = self.client
        secrets = [*secrets, client.client_secret]

        def authenticated() -> Tuple[Dict[str, str], Dict[str, str]]:
            """The form and headers with the client's authentication (a fresh assertion each time)."""
            body, headers = dict(form), {}
            if client.auth_method == "client_secret_basic" and client.client_secret:
                pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
                headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
            elif client.auth_method == "client_secret_post" and client.client_secret:
                body["client_id"] = client.client_id
                body["client_secret"] = client.client_secret
            elif client.auth_method == "private_key_jwt" and self.signer is not None:
                assertion = self.signer(self.issuer)
                secrets.append(assertion)
                body.update(client_id=client.client_id, client_assertion_type=ASSERTION_TYPE,
                            client_assertion=assertion)
            elif client.client_id:  # a public client; a workload may have no client id at all
                body["client_id"] = client.client_id
            return body, headers

        status, document = self._post(fetch, authenticated)
        if status != 200 or not isinstance(document, dict) or not isinstance(document.get("access_token"), str) \
                or not document["access_token"]:
            raise server_error(f"{what} at {self.issuer}", status, document, secrets, default="invalid_response")
        kind = document.get("token_type")
        kind = kind.lower() if isinstance(kind, str) else "bearer"
        if kind == "dpop" and self.dpop is not None:
            return Token.from_response(document, previous_refresh=previous_refresh, token_type="DPoP")
        if kind != "bearer":
            raise AuthError(f"{what} at {self.issuer} gave a {str(document.get('token_type'))[:32]!r} token; "
                            + ("only bearer and DPoP tokens are supported" if self.dpop is not None else
                               "only bearer tokens are supported without DPoP (pass dpop=True for DPoP)"),
                            error="unsupported_token_type")
        return Token.from_response(document, previous_refresh=previous_refresh)

    def _post(self, fetch: Fetcher,
              authenticated: Callable[[], Tuple[Dict[str, str], Dict[str, str]]]) -> Tuple[int, Any]:
        """POST the form; with DPoP, with a fresh proof, once more with the server's nonce if it asks for one."""
        form, headers = authenticated()
        if self.dpop is None:
            return fetch.post_form(self.url, form, headers)
        dpop = self.dpop
        status, document, answer = fetch.post_form_with_headers(
            self.url, form, {**headers, "DPoP": dpop.proof("POST", self.url)})
        nonce = dpop.nonces.note(self.url, answer)
        if status in (400, 401) and isinstance(document, dict) and document.get("error") == "use_dpop_nonce" \
                and nonce is not None:
            log.debug("The token endpoint %s asks for a DPoP nonce; sending the request again with it", self.url)
            form, headers = authenticated()
            status, document, answer = fetch.post_form_with_headers(
                self.url, form, {**headers, "DPoP": dpop.proof("POST", self.url)})
            dpop.nonces.note(self.url, answer)
        return status, document
