"""The transport type names a server config may use, and the one each stands for.

Config files of other tools spell Streamable HTTP three ways; every reader of a config
(:mod:`mcpsync.config`) and the transport factory (:mod:`mcpsync.transports._factory`) map
them through this table. Constants only: no I/O, no threads.
"""

from __future__ import annotations

from typing import Dict

STDIO = "stdio"
#: Streamable HTTP.
HTTP = "http"
#: The legacy HTTP+SSE transport (2024-11-05).
SSE = "sse"

#: A config's ``type`` -> the transport it names.
TYPE_NAMES: Dict[str, str] = {"stdio": STDIO, "http": HTTP, "streamable-http": HTTP, "streamableHttp": HTTP,
                              "sse": SSE}
