"""Rich notebook display for results: HTML and Markdown renderings.

Only built when a notebook asks (``_repr_html_``), so it costs nothing elsewhere.
All text from the server is escaped: a server cannot inject markup or script.

This module imports nothing of ours: it reads the result objects by their fields and
picks a content block's rendering by its wire ``type``, so :mod:`mcpsync.types` can
use it without an import circle. Pure functions; safe from any thread.
"""

from __future__ import annotations

import html
import json
from typing import Any, Iterable, List, Sequence

_SAFE_IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_MAX_CELL = 300


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _short(value: Any, limit: int = _MAX_CELL) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"  # noqa: RUF001


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], caption: str) -> str:
    head = "".join(f"<th style='text-align:left'>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return (f"<table><caption style='text-align:left'>{_e(caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _json_tree(value: Any, label: str) -> str:
    """A collapsible JSON view built from <details> elements (no script needed)."""
    if isinstance(value, dict) and value:
        inner = "".join(_json_tree(v, str(k)) for k, v in value.items())
        return f"<details><summary><code>{_e(label)}</code> {{{len(value)}}}</summary>" \
               f"<div style='margin-left:1.2em'>{inner}</div></details>"
    if isinstance(value, list) and value:
        inner = "".join(_json_tree(v, f"[{i}]") for i, v in enumerate(value))
        return f"<details><summary><code>{_e(label)}</code> [{len(value)}]</summary>" \
               f"<div style='margin-left:1.2em'>{inner}</div></details>"
    return f"<div><code>{_e(label)}</code>: <code>{_e(json.dumps(value, ensure_ascii=False))}</code></div>"


def content_html(block: Any) -> str:
    """One content block (a :class:`~mcpsync.types.Content`), by its wire ``type``."""
    kind = block.type
    if kind == "text":
        return f"<pre style='white-space:pre-wrap'>{_e(block.text)}</pre>"
    if kind == "image":
        if block.mime_type in _SAFE_IMAGE_TYPES and block.data:
            return f"<img src='data:{_e(block.mime_type)};base64,{_e(block.data)}' alt='image from the server'/>"
        return f"<div>[image {_e(block.mime_type)}]</div>"
    if kind == "audio":
        return f"<audio controls src='data:{_e(block.mime_type)};base64,{_e(block.data)}'></audio>"
    if kind == "resource_link":
        return f"<div>🔗 <code>{_e(block.uri)}</code> {_e(block.name)}</div>"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        body = f"<pre style='white-space:pre-wrap'>{_e(_short(text, 5000))}</pre>" if text else ""
        return f"<div>📄 <code>{_e(resource.uri)}</code></div>{body}"
    return _json_tree(block.to_dict(), kind or "content")


def tools_html(tools: Sequence[Any]) -> str:
    rows = ([f"<code>{_e(t.name)}</code>", _e(t.title or ""), _e(_short(t.description)),
             ", ".join(f"<code>{_e(a)}</code>" for a in t.required_arguments)] for t in tools)
    return _table(["name", "title", "description", "required arguments"], rows, f"{len(tools)} tools")


def tools_markdown(tools: Sequence[Any]) -> str:
    lines = ["| name | description | required arguments |", "| --- | --- | --- |"]
    for t in tools:
        description = _short(t.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{t.name}` | {description} | {', '.join(t.required_arguments)} |")
    return "\n".join(lines)


def resources_html(resources: Sequence[Any]) -> str:
    rows = ([f"<code>{_e(r.uri)}</code>", _e(r.name), _e(r.mime_type or ""), _e(_short(r.description))]
            for r in resources)
    return _table(["uri", "name", "mime type", "description"], rows, f"{len(resources)} resources")


def prompts_html(prompts: Sequence[Any]) -> str:
    rows = ([f"<code>{_e(p.name)}</code>", _e(_short(p.description)),
             ", ".join(f"<code>{_e(a.name)}</code>{'*' if a.required else ''}" for a in p.arguments)]
            for p in prompts)
    return _table(["name", "description", "arguments (* required)"], rows, f"{len(prompts)} prompts")


def call_result_html(result: Any) -> str:
    parts: List[str] = []
    if result.is_error:
        parts.append("<div style='color:#b00020'><b>Tool error</b></div>")
    parts.extend(content_html(block) for block in result.content)
    if result.structured_content is not None:
        parts.append(_json_tree(result.structured_content, "structured content"))
    return "<div>" + "".join(parts) + "</div>"


def read_result_html(result: Any) -> str:
    parts = []
    for item in result.contents:
        parts.append(f"<div><code>{_e(item.uri)}</code> {_e(item.mime_type or '')}</div>")
        # Text and blob contents are told apart by the field each has (see ResourceContents.parse).
        blob = getattr(item, "blob", None)
        text = getattr(item, "text", None)
        if blob is None and text is not None and _is_app_page(item.mime_type):
            # An MCP Apps page: shown in a frame whose empty sandbox allows no script, form,
            # popup or navigation (mcpsync is not an Apps host: the page is shown, never run).
            parts.append(f"<iframe sandbox='' srcdoc='{_e(text)}' title='MCP App view (static)' "
                         "style='width:100%;height:420px;border:1px solid #ccc'></iframe>")
        elif blob is None and text is not None:
            parts.append(f"<pre style='white-space:pre-wrap'>{_e(_short(text, 20000))}</pre>")
        elif blob is not None:
            if item.mime_type in _SAFE_IMAGE_TYPES:
                parts.append(f"<img src='data:{_e(item.mime_type)};base64,{_e(blob)}'/>")
            else:
                parts.append(f"<div>[{len(blob) * 3 // 4} bytes]</div>")
    return "<div>" + "".join(parts) + "</div>"


def prompt_result_html(result: Any) -> str:
    parts = [f"<div><i>{_e(result.description)}</i></div>"] if result.description else []
    for message in result.messages:
        parts.append(f"<div><b>{_e(message.role)}</b>{content_html(message.content)}</div>")
    return "<div>" + "".join(parts) + "</div>"


def _is_app_page(mime_type: Any) -> bool:
    """``text/html;profile=mcp-app`` (parameters in any order, spacing and case)."""
    if not isinstance(mime_type, str):
        return False
    kind, _, params = mime_type.partition(";")
    profiles = [p.strip().lower() for p in params.split(";")]
    return kind.strip().lower() == "text/html" and "profile=mcp-app" in profiles
