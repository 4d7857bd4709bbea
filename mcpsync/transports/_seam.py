"""The one seam between "a target became a transport" and the caller: who may take it over.

Every transport built from a target (``create_transport`` and ``connect(argv)``) is handed to
:func:`hand_over` just before it is returned. With no interceptor installed (always, unless a
cassette is active) that is one None check and the transport itself. A cassette installs an
interceptor: recording, it sets a message tap on the transport; replaying, it returns a stand-in
that starts no process and opens no socket (the real, unopened transport is closed).

The transports layer imports nothing above it: the interceptor is installed from above.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

from .base import Transport

__all__ = ["Interceptor", "hand_over", "install"]

#: ``interceptor(transport)`` returns the transport to use in its place (or the same one).
Interceptor = Callable[[Transport], Transport]

_interceptor: Optional[Interceptor] = None
_lock = threading.Lock()


def install(interceptor: Optional[Interceptor]) -> Optional[Interceptor]:
    """Make ``interceptor`` the one consulted (None: none); returns the one it replaces."""
    global _interceptor
    with _lock:
        previous, _interceptor = _interceptor, interceptor
    return previous


def hand_over(transport: Transport) -> Transport:
    """The transport to use for ``transport`` (a freshly built, unopened one)."""
    interceptor = _interceptor
    if interceptor is None:
        return transport
    return interceptor(transport)
