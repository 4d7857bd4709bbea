"""MkDocs hook: render the reST habits of mcpsync's docstrings as plain Markdown would.

The docstrings are written to read well in ``help()`` and an editor, with
reST roles (``:class:`~mcpsync.ToolError```) and ``::`` before an example. In
the generated reference a role becomes its name in code (``ToolError``; the
full path when the reference has no ``~``), and a ``::`` that ends a paragraph
becomes ``:`` (or goes, when it stands alone).
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj|ref):<code>(~?)([^<]+)</code>")
_ALONE = re.compile(r"<p>::</p>\s*")
_TRAILING = re.compile(r"::</p>")


def _role(found: "re.Match[str]") -> str:
    short, target = found.groups()
    name = target.rsplit(".", 1)[-1] if short else target
    return f"<code>{name}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    html = _ROLE.sub(_role, html)
    html = _ALONE.sub("", html)
    return _TRAILING.sub(":</p>", html)
