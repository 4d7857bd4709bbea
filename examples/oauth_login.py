"""Log in to an MCP server that requires OAuth, then list its tools.

    python examples/oauth_login.py https://example.com/mcp
    python examples/oauth_login.py https://example.com/mcp --login paste     # over SSH: paste the redirect URL
    python examples/oauth_login.py https://example.com/mcp --logout          # forget the stored tokens

    MCP_CLIENT_ID=svc MCP_CLIENT_SECRET=... python examples/oauth_login.py https://example.com/mcp --headless

The first run asks you to log in (a browser window, or a URL to open and an
address to paste back); the tokens are kept in your config directory
(~/.config/mcpsync/tokens.json on Linux, readable only by you), so later runs
do not ask again until the refresh token stops working. --headless uses the
client credentials grant instead: no person, a client registered beforehand.
"""

import argparse
import logging
import os
import sys

import mcpsync


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="the MCP server's URL (https://...)")
    parser.add_argument("--login", default="auto", choices=["auto", "browser", "paste"],
                        help="how you log in (default: the browser, or paste in a notebook or over SSH)")
    parser.add_argument("--client-id", help="a client registered with the authorization server beforehand")
    parser.add_argument("--headless", action="store_true",
                        help="client credentials from MCP_CLIENT_ID and MCP_CLIENT_SECRET")
    parser.add_argument("--logout", action="store_true", help="forget the stored tokens for this server")
    parser.add_argument("-v", "--verbose", action="store_true", help="show what the login does (never tokens)")
    args = parser.parse_args()
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    if args.headless:
        auth = mcpsync.ClientCredentials(os.environ["MCP_CLIENT_ID"],
                                         client_secret=os.environ["MCP_CLIENT_SECRET"], server_url=args.url)
    else:
        auth = mcpsync.OAuth(args.url, client_id=args.client_id, login=args.login)
        if args.logout:
            auth.logout()
            print(f"Forgot the tokens for {args.url}")
            return 0

    try:
        # Log in first, on this thread: a login may take as long as you need, while every
        # request has a timeout. (With a stored or refreshable token this returns at once.)
        auth.login()
        with mcpsync.connect(args.url, auth=auth) as client:
            print(f"Connected to {client.server_info.name} as {auth!r}")
            for tool in client.list_tools():
                print(f"  tool {tool.name}: {tool.description or ''}")
    except mcpsync.AuthError as exc:
        print(f"Authorization failed ({exc.error}): {exc}", file=sys.stderr)
        return 1
    except mcpsync.MCPSyncError as exc:
        print(f"Could not talk to {args.url}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
