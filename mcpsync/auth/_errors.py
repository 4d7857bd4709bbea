"""AuthError texts built from what servers send: OAuth error objects, with every secret redacted.

An authorization server's ``error_description`` is text we did not write; it
is shortened, and any secret of the flow in progress (token, code, verifier,
client secret) that appears in it is replaced by ``[redacted]``.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ..exceptions import AuthError

__all__ = ["redact", "server_error"]

_LIMIT = 300


def redact(text: str, secrets: Iterable[Optional[str]]) -> str:
    """``text`` with each (non-empty) secret replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text


def server_error(what: str, status: int, document: Any, secrets: Iterable[Optional[str]] = (),
                 default: str = "server_error") -> AuthError:
    """An AuthError for a refused request: ``<what> failed: HTTP <status>: <error>: <description>``.

    ``.error`` is the server's OAuth ``error`` code when it sent one, else ``default``.
    """
    code, description = default, ""
    if isinstance(document, dict):
        if isinstance(document.get("error"), str) and document["error"]:
            code = document["error"][:64]
        if isinstance(document.get("error_description"), str):
            description = " ".join(document["error_description"].split())
    if len(description) > _LIMIT:
        description = description[:_LIMIT] + "..."
    text = f"{what} failed: HTTP {status}: {code}"
    if description:
        text += f": {description}"
    secrets = list(secrets)
    return AuthError(redact(text, secrets), error=redact(code, secrets))
