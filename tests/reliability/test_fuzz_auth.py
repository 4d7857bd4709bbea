"""Fuzz targets of the authorization readers: the WWW-Authenticate parser, the token file, DPoP
nonces (and the stored DPoP key) and the URL classifier of the egress gate (``transports/_egress.py``:
address classes, the discovery rule, reading a URL's target and a server's references).

Each input ends in a result or an MCPSyncError subclass (AuthError, ConnectError), in bounded time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple
from urllib.parse import urlsplit

import pytest
from hypothesis import strategies as st

from mcpsync import MCPSyncError
from mcpsync.auth._challenge import Challenge, parse_challenges
from mcpsync.auth._dpop import Nonces
from mcpsync.auth._grant import Grant
from mcpsync.transports._egress import DiscoveryGate, address_class, check_reference, target
from mcpsync.auth._tokens import FileTokenStore, Token

from .fuzzing import LEVELS, fuzz

scalars = (st.none() | st.booleans() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400)
           | st.floats() | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)

# -- WWW-Authenticate ------------------------------------------------------------------------

challenge_pieces = st.sampled_from([
    "Bearer", "DPoP", "Basic", "bearer", " ", "\t", ",", "=", "==", '"', '\\"', "\\", "error", "scope",
    "resource_metadata", "error_description", "realm", "invalid_token", "use_dpop_nonce", "abc", "a b", "é",
])
headers = st.one_of(st.lists(challenge_pieces, max_size=30).map("".join), st.text(max_size=200),
                    st.integers(1, 60_000).map(lambda n: "Bearer a" + "=" * n + "b"),
                    st.integers(1, 30_000).map(lambda n: "Bearer " + "a=" * n))


def read_challenge(value: str) -> None:
    parse_challenges(value)
    Challenge.from_header(value)


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_www_authenticate(level: str) -> None:
    fuzz("www-authenticate", level, headers, read_challenge, (MCPSyncError,))


# -- the token file --------------------------------------------------------------------------

token_dicts = st.fixed_dictionaries({}, optional={
    "access_token": st.text(max_size=8) | json_values, "expires_at": json_values, "lifetime": json_values,
    "refresh_token": json_values, "scope": json_values, "token_type": st.sampled_from(["DPoP", "Bearer"]) | json_values,
})
grants = st.fixed_dictionaries({}, optional={
    "issuer": st.just("https://as") | json_values, "resource": st.just("https://rs") | json_values,
    "token_endpoint": st.just("https://as/token") | json_values,
    "client": st.fixed_dictionaries({}, optional={"client_id": st.just("c") | json_values,
                                                   "auth_method": st.just("none") | json_values,
                                                   "source": st.just("dcr") | json_values,
                                                   "client_secret": json_values,
                                                   "redirect_uris": json_values}) | json_values,
    "token": token_dicts | json_values, "scopes": json_values,
    "dpop_key": st.fixed_dictionaries({}, optional={"kty": st.sampled_from(["EC", "RSA", "OKP"]) | json_values,
                                                     "crv": st.sampled_from(["P-256", "P-384"]) | json_values,
                                                     "x": json_values, "y": json_values, "d": json_values,
                                                     "n": json_values, "e": json_values, "alg": json_values})
    | json_values,
})
token_files = st.one_of(
    st.dictionaries(st.sampled_from(["k", "other"]), grants | json_values, max_size=2).map(
        lambda d: json.dumps(d, allow_nan=True).encode()),
    st.binary(max_size=200),
    st.integers(1, 20_000).map(lambda n: b'{"k": ' + b"[" * n + b"]" * n + b"}"),
    st.integers(4000, 5000).map(lambda n: b'{"k": {"token": {"access_token": "a", "expires_at": 1' + b"0" * n + b"}}}"),
)


def token_file_reader(path: Path) -> Callable[[bytes], None]:
    """The token-file target: write one file's bytes to ``path``, then read every grant and token in it."""
    store = FileTokenStore(path)

    def read(content: bytes) -> None:
        path.write_bytes(content)
        for key in ("k", "other"):
            value = store.load(key)
            if isinstance(value, dict):
                grant = Grant.from_dict(value)
                token = Token.from_dict(value.get("token") if isinstance(value.get("token"), dict) else {})
                for found in (grant.token if grant else None, token):
                    if found is not None:
                        repr(found)
                        found.expiring(0.0)
                        found.expired(0.0)

    return read


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_token_file(level: str, tmp_path: Path) -> None:
    fuzz("token-file", level, token_files, token_file_reader(tmp_path / "tokens.json"), (MCPSyncError,))


# -- DPoP nonces -----------------------------------------------------------------------------

urls = st.one_of(st.sampled_from(["https://as.example/token", "http://[::1]:8080/x", "https://h:99999/",
                                  "https://[::1/", "http://[v1.x]/", "//h", "", "https://u@h/"]),
                 st.text(max_size=60))
nonces = st.one_of(st.text(max_size=40), st.integers(1, 3000).map(lambda n: "n" * n),
                   st.sampled_from(["", "\x00", "a\nb", "é"]))


def note_nonce(case: Tuple[str, str]) -> None:
    url, nonce = case
    store = Nonces()
    noted = store.note(url, {"DPoP-Nonce": nonce})
    got = store.get(url)
    assert noted is None or (got == noted and len(noted) <= 1024 and noted.isprintable())


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_dpop_nonce(level: str) -> None:
    fuzz("dpop-nonce", level, st.tuples(urls, nonces), note_nonce, (MCPSyncError,))


# -- the URL classifier ----------------------------------------------------------------------

addresses = st.one_of(
    st.ip_addresses().map(str), st.text(max_size=20),
    st.sampled_from(["0.0.0.0", "0", "::", "[::]", "127.1", "0x7f.1", "::ffff:127.0.0.1", "fe80::1%eth0",
                     "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "2130706433", "localhost", "[::1]"]),
)
hosts = addresses | st.sampled_from(["example.com", "a.localhost", "LOCALHOST", "x..y", "é.example", ""])
fuzzed_urls = st.one_of(
    st.builds(lambda scheme, host, port, rest: f"{scheme}://{host}{port}{rest}",
              st.sampled_from(["https", "http", "HTTPS", "ftp", ""]),
              hosts | st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
              st.sampled_from(["", ":443", ":0", ":99999", ":-1", ":x", ":"]),
              st.sampled_from(["", "/", "/.well-known/x", "?q", "#f", "\\@evil", "@evil/", "/\x00"])),
    st.text(max_size=60),
)


def classify(case: Tuple[str, str, str, List[str]]) -> None:
    server_class, server_url, url, resolved = case
    address_class(url)

    def resolver(host: str, port: int) -> List[str]:
        if not resolved:
            raise OSError("does not resolve")
        return resolved

    DiscoveryGate(server_url, server_class=server_class, resolver=resolver).check("GET", url)
    target(url)
    check_reference(server_url or "https://h/", url, "a redirect to")


def readable(url: str) -> bool:
    try:
        urlsplit(url).port
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_url_classifier(level: str) -> None:
    # The MCP server's own URL is one mcpsync has already connected to (a gate is made for it
    # after), so only readable ones; every other URL is anything a server's metadata may name.
    server_urls = fuzzed_urls.filter(readable)
    fuzz("url-classifier", level, st.tuples(st.sampled_from(["loopback", "private", "public"]),
                                            server_urls, fuzzed_urls, st.lists(addresses, max_size=3)),
         classify, (MCPSyncError,))
