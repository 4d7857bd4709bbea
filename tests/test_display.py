"""Notebook rendering of results and the progress bar helper."""

from __future__ import annotations

import io

from mcpsync import CallToolResult, GetPromptResult, ProgressBar, ReadResourceResult, Tool, ToolList


def tools():
    return ToolList([
        Tool.from_dict({"name": "echo", "title": "Echo", "description": "Say <it> back",
                        "inputSchema": {"type": "object", "required": ["text"]}}),
        Tool.from_dict({"name": "add", "description": "a | b"}),
    ])


def test_a_tool_list_is_still_a_list_and_renders_as_a_table():
    listed = tools()
    assert isinstance(listed, list) and [t.name for t in listed] == ["echo", "add"]
    html = listed._repr_html_()
    assert "<table>" in html and "2 tools" in html and "<code>text</code>" in html
    assert "Say &lt;it&gt; back" in html  # server text is escaped, never markup
    markdown = listed._repr_markdown_()
    assert "| `echo` | Say <it> back | text |" in markdown and "a \\| b" in markdown


def test_a_tool_result_shows_text_structured_json_and_images():
    result = CallToolResult.from_dict({
        "content": [{"type": "text", "text": "<b>hi</b>"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                    {"type": "image", "data": "x", "mimeType": "image/svg+xml"}],
        "structuredContent": {"sum": 3, "items": [1, 2]},
        "isError": True,
    })
    html = result._repr_html_()
    assert "&lt;b&gt;hi&lt;/b&gt;" in html
    assert "<img src='data:image/png;base64,iVBORw0KGgo='" in html
    assert "image/svg+xml" in html and "data:image/svg+xml" not in html  # no scriptable images
    assert "<details>" in html and "structured content" in html and "Tool error" in html


def test_resources_and_prompts_render():
    read = ReadResourceResult.from_dict({"contents": [{"uri": "demo://a", "text": "hello"},
                                                      {"uri": "demo://b", "blob": "AAAA", "mimeType": "x/y"}]})
    assert "hello" in read._repr_html_() and "[3 bytes]" in read._repr_html_()
    prompt = GetPromptResult.from_dict({"description": "greeting", "messages": [
        {"role": "user", "content": {"type": "text", "text": "Hello"}}]})
    assert "<b>user</b>" in prompt._repr_html_() and "Hello" in prompt._repr_html_()


def test_plain_repr_stays_short():
    result = CallToolResult.from_dict({"content": [{"type": "text", "text": "x" * 10_000}]})
    assert len(repr(result)) < 200


def test_the_progress_bar_draws_a_text_line_without_tqdm():
    out = io.StringIO()
    with ProgressBar("work", file=out, use_tqdm=False) as bar:
        bar(1, 4, "first")
        bar(4, 4, "done")
    assert bar.render() == "work [" + "#" * 30 + "] 4/4 done"
    assert out.getvalue().endswith("\n") and "1/4 first" in out.getvalue()
