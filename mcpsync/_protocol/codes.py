"""The error codes MCP adds on top of JSON-RPC's (``-32700`` .. ``-32603`` live in
:mod:`mcpsync._rpc.jsonrpc`, the engine's own).

Each exception class in :mod:`mcpsync.exceptions` that stands for one of these carries it as
its ``CODE``. Constants only: no I/O, no threads.
"""

from __future__ import annotations

#: ``resources/read`` of a resource the server does not have (legacy servers; modern ones use -32602).
RESOURCE_NOT_FOUND = -32002
#: Modern HTTP: the ``Mcp-Param-*`` headers do not match the request body (list the tools again).
HEADER_MISMATCH = -32020
#: The server needs a client capability the request did not declare.
MISSING_CAPABILITY = -32021
#: The server speaks none of the requested versions; ``data.supported`` lists the ones it does.
UNSUPPORTED_VERSION = -32022
#: The user must complete URL-mode elicitations (``data.elicitations``) before the call can go on.
URL_ELICITATION_REQUIRED = -32042
#: A sampling request the user (or the handler) refused.
USER_REJECTED = -1
