"""How the auth objects cross processes: pickled as their settings, their process's state made anew.

An auth object (:class:`~mcpsync.OAuth`, :class:`~mcpsync.ClientCredentials`,
``WorkloadIdentity``, ``EnterpriseAuth``) pickles as what it was built with: the server URL it
is bound to, the client id and secret, scopes, the login handler, the token store and the other
options. Never in the pickle: the tokens it holds, what discovery learned, the DPoP key it
made, its locks. Unpickled, it starts as a new object with those settings would: it finds
tokens in its store (a :class:`~mcpsync.FileTokenStore` pickles as its path, so a worker on the
same machine reads the same file), else gets new ones. A
:class:`~mcpsync.MemoryTokenStore` pickles empty, unless it was made with ``pickle_tokens=True``.

A setting that cannot be pickled (a lambda as ``login``, a callable ``token``, a private key
object) makes pickling raise ``TypeError`` naming it.

In a forked child (see :mod:`mcpsync._fork`) an auth object and its store keep what they held
(the same process image: the same trust), but get new locks: one a parent thread held at the
fork (during a login, a refresh, a write of the token file) would otherwise stay held for ever.
"""

from __future__ import annotations

import pickle
from typing import Any, ClassVar, Dict, FrozenSet

from .. import _fork

__all__ = ["ProcessLocal", "require_picklable"]

#: How errors name the attributes that hold the user's settings (their constructor arguments).
_NAMES = {"_login": "login", "_open_browser": "open_browser", "_private_key": "private_key",
          "_secret": "client_secret", "_idp_secret": "idp_client_secret", "source": "token source",
          "_dpop_own_key": "DPoP key"}
#: Settings whose value is a secret: errors show their type, never their repr.
_SECRET = frozenset({"_private_key", "_secret", "_idp_secret", "client_secret", "_dpop_own_key"})


def require_picklable(owner: str, attribute: str, value: Any) -> None:
    """Raise TypeError naming ``attribute`` (a setting of ``owner``) when ``value`` cannot be pickled."""
    try:
        pickle.dumps(value)
    except Exception as exc:
        shown = f"(a {type(value).__name__})" if attribute in _SECRET else repr(value)
        raise TypeError(
            f"Cannot pickle {owner}: its {_NAMES.get(attribute, attribute.lstrip('_'))} {shown} cannot be pickled "
            f"({exc}). Give a function defined at module level (not a lambda, closure or nested function) or, for "
            "a key, its PEM text; or build the auth object in the worker process instead of sending it there"
        ) from exc


class ProcessLocal:
    """Mixin: pickles its ``__dict__`` but for :attr:`_process_only`, which unpickling makes anew.

    Subclasses call ``_fork.watch(self, "_after_fork_in_child")`` when built, and define
    :meth:`_fresh_process_state` (every process-only attribute, as in a new object) and
    :meth:`_after_fork_in_child` (new locks).
    """

    #: Attributes of one process (locks, what it learned, tokens): never pickled.
    _process_only: ClassVar[FrozenSet[str]] = frozenset()

    def __getstate__(self) -> Dict[str, Any]:
        state = {name: value for name, value in self.__dict__.items() if name not in self._process_only}
        for name, value in state.items():
            require_picklable(type(self).__name__, name, value)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._fresh_process_state()
        _fork.watch(self, "_after_fork_in_child")

    def _fresh_process_state(self) -> None:
        """Set every attribute of :attr:`_process_only` as a new object has it."""
        raise NotImplementedError

    def _after_fork_in_child(self) -> None:
        """In a forked child: replace the locks (no lock inherited from the parent is ever taken here)."""
        raise NotImplementedError
