"""Where identity tokens come from, for the grants that trade one for an access token.

:class:`~mcpsync.auth.WorkloadIdentity` and :class:`~mcpsync.auth.EnterpriseAuth`
both start from a signed JWT that someone else issued: a platform's workload
token, an enterprise identity provider's ID token. A :class:`TokenSource` reads
it afresh each time a grant needs it (a file is re-read, a callable called
again), so a token the platform rotates is never used stale, and refuses one
that has already expired, saying where it came from.

Blocking: a callable source runs on the thread that needs a token, under the
auth object's lock. No threads of its own.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Callable, Optional, Union

from ..exceptions import AuthError

__all__ = ["TokenSource", "expiry_of"]

Source = Union[str, "os.PathLike[str]", Callable[[], str]]

_SKEW = 30.0  # seconds of clock difference tolerated before calling a token expired


def expiry_of(jwt: str) -> Optional[float]:
    """The ``exp`` claim of a JWT, read without verifying it (only to avoid sending a dead token), or None."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError, RecursionError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


class TokenSource:
    """A JWT read on demand from a file path, a callable, or a fixed string.

    Args:
        source: a path (``str`` or ``PathLike``) when ``is_file``; else a callable
            returning the token, or the token itself.
        what: how error messages name it ("workload identity token", "ID token").
        is_file: whether a ``str`` source is a path.
    """

    def __init__(self, source: Source, what: str, *, is_file: bool) -> None:
        if not is_file and not callable(source) and not isinstance(source, str):
            raise TypeError(f"The {what} must be a string or a callable returning one")
        self._source = source
        self._is_file = is_file
        self.what = what

    def __repr__(self) -> str:
        if self._is_file:
            return f"<TokenSource file {str(self._source)!r}>"
        return "<TokenSource callable>" if callable(self._source) else "<TokenSource [redacted]>"

    def read(self) -> str:
        """The current token. Blocking (file read, or the callable).

        Raises:
            AuthError: (``identity_token_unavailable``) it cannot be read or is empty;
                (``identity_token_expired``) its ``exp`` has passed.
        """
        origin = self._origin()
        token = self._fetch(origin)
        if not isinstance(token, str) or not token.strip():
            raise AuthError(f"The {self.what} from {origin} is empty", error="identity_token_unavailable")
        token = token.strip()
        expires = expiry_of(token)
        if expires is not None and expires + _SKEW < time.time():
            raise AuthError(f"The {self.what} from {origin} expired at {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(expires))} "
                            "UTC; renew it at its source (the platform rotates token files; a callable should "
                            "fetch a fresh one)", error="identity_token_expired")
        return token

    def _fetch(self, origin: str) -> object:
        """What the source holds now, unchecked: the callable's answer, the file's text, or the token given."""
        source = self._source
        try:
            if callable(source):
                return source()
            if self._is_file:
                return Path(source).read_text(encoding="utf-8")
            return source
        except OSError as exc:
            raise AuthError(f"Cannot read the {self.what} from {origin}: {exc.strerror or exc}",
                            error="identity_token_unavailable") from exc
        except AuthError:
            raise
        except Exception as exc:  # a user callable may raise anything; say which part failed
            raise AuthError(f"Getting the {self.what} from {origin} failed: {type(exc).__name__}: {exc}",
                            error="identity_token_unavailable") from exc

    def _origin(self) -> str:
        if self._is_file:
            return f"the file {str(self._source)!r}"
        return "its callable" if callable(self._source) else "the string given"

