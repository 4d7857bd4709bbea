"""The MCP vocabulary, a leaf under everything: method names and their table, ``_meta`` keys,
error codes and protocol versions.

No I/O, no threads, no imports from the rest of the package: every layer, the fake server in
:mod:`mcpsync.testing` included, names the protocol through these modules, so the client and the
fake server cannot drift apart and a new method is one row here.

- :mod:`.methods`   request and notification names; the table of what each request needs
- :mod:`.meta`      the reserved ``_meta`` keys and extension ids
- :mod:`.codes`     the error codes MCP adds to JSON-RPC's
- :mod:`.versions`  the protocol versions, in two eras
"""
