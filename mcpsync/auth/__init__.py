"""OAuth 2.1 authorization for MCP servers over HTTP, as ``requests`` auth objects.

::

    import mcpsync

    auth = mcpsync.OAuth()                                  # a person logs in (browser, or paste)
    with mcpsync.connect("https://example.com/mcp", auth=auth) as client:
        print(client.list_tools())

    auth = mcpsync.ClientCredentials("svc", client_secret="...")   # a job without a person
    auth = mcpsync.OAuth(dpop=True)                         # tokens bound to a key (DPoP)
    auth = mcpsync.OAuth(dpop=DPoPKey.from_pem(pem))        # ... to a key of your own

What is here, module by module: ``_challenge`` (WWW-Authenticate),
``_urls`` (canonical resource URIs, well-known URLs, URL hygiene),
``_fetch`` (HTTP to authorization servers; the exception boundary),
``_discovery`` (protected resource and authorization server metadata),
``_registration`` (client identity), ``_grants`` (token endpoint requests), ``_grant`` (the stored unit),
``_assertions`` (identity tokens read on demand), ``_workload`` and
``_enterprise`` (the JWT bearer grant from a workload token or an ID-JAG),
``_jwt`` (private_key_jwt, optional PyJWT), ``_dpop`` (DPoP keys, proofs
and nonces, optional cryptography), ``_pkce``, ``_flow`` (the
person's part: browser, paste, callable), ``_tokens`` (tokens and stores),
``_pickling`` (pickled as settings, never tokens; new locks after fork),
``_bearer`` (the requests auth machinery: token renewal, over ``_hook``, the auth call and
response hook, and ``_stored``, the grants in the token store), ``_oauth``, ``_client_credentials``,
``_workload`` and ``_enterprise`` (the public auth classes).

This package imports ``requests`` (the auth classes subclass
``requests.auth.AuthBase``); ``import mcpsync`` loads it only on first use
of one of these names.
"""

from ._client_credentials import ClientCredentials
from ._dpop import DPoPKey
from ._enterprise import EnterpriseAuth
from ._oauth import OAuth
from ._tokens import FileTokenStore, MemoryTokenStore, TokenStore
from ._workload import WorkloadIdentity

__all__ = ["ClientCredentials", "DPoPKey", "EnterpriseAuth", "FileTokenStore", "MemoryTokenStore", "OAuth", "TokenStore",
           "WorkloadIdentity"]
