"""Talk to an MCP server over HTTP with the same blocking API as over stdio.

Start a server, for example the test server built with the official SDK:

    python tests/servers/http_sdk_server.py --mode sse-stateful --port 8000

then run:

    python examples/http_client.py http://127.0.0.1:8000/mcp [--token TOKEN]

The URL may be a Streamable HTTP endpoint or a legacy HTTP+SSE one:
``mcpsync.connect(url)`` tries Streamable HTTP first and falls back to the
legacy transport when the server answers the first POST with 400, 404 or 405.
"""

from __future__ import annotations

import argparse
import sys

import mcpsync


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000/mcp")
    parser.add_argument("--token", help="a bearer token (sent as Authorization: Bearer ...)")
    parser.add_argument("--insecure", action="store_true", help="skip TLS verification (testing only)")
    args = parser.parse_args()

    options = {
        "headers": {"X-Client": "mcpsync-example"},  # sent on every request
        "timeout": 30,                                # seconds, per call
        "verify": not args.insecure,                  # TLS verification is on by default
    }
    if args.token:
        options["token"] = args.token

    try:
        client = mcpsync.connect(args.url, **options)
    except mcpsync.HTTPStatusError as exc:
        # e.g. "HTTP 401: ... (WWW-Authenticate: Bearer resource_metadata=...)"
        print(f"The server refused us: {exc}", file=sys.stderr)
        return 1
    except mcpsync.ConnectError as exc:
        print(f"Cannot reach the server: {exc}", file=sys.stderr)
        return 1

    with client:
        transport = client.transport
        print(f"Connected to {client.server_info.name} over {type(transport).__name__}, "
              f"protocol {client.protocol_version}")
        if isinstance(transport, mcpsync.StreamableHTTPTransport) and transport.session_id:
            print("  the server keeps a session for us (Mcp-Session-Id is sent on every request)")

        tools = client.list_tools()
        print("Tools:", ", ".join(tool.name for tool in tools) or "(none)")
        names = {tool.name for tool in tools}

        if "echo" in names:
            print("echo ->", client.call_tool("echo", {"text": "hello over HTTP"}).text)

        if "progress" in names:
            def show(progress: float, total: float | None, message: str | None) -> None:
                print(f"  progress {progress:g}/{total or '?'} {message or ''}")

            print("progress ->", client.call_tool("progress", {"steps": 3}, on_progress=show).text)

        if "block" in names:
            try:
                client.call_tool("block", {"seconds": 5}, timeout=0.5)
            except mcpsync.RequestTimeout as exc:
                print(f"block -> {exc} (the server was told to cancel)")

    # One-off call without a handshake or a session: only for stateless servers.
    try:
        reply = mcpsync.call_mcp(args.url, "tools/list", headers={"MCP-Protocol-Version": "2025-11-25"},
                                 timeout=5)
        print("call_mcp tools/list ->", len(reply.get("result", {}).get("tools", [])), "tools")
    except mcpsync.HTTPStatusError as exc:
        print(f"call_mcp needs a stateless server; this one said: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
