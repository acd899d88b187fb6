"""The HTTP/1.1 transport, against a local server that answers every request with given bytes.

The server is a plain TCP one, so each case says exactly what comes back on the wire: the
answer's framing (length, chunks, until close), what breaks it off, and whether the server keeps
the connection for the next request; and what the pool does when the server closes a connection
it had kept. Where the proxy is taken from in the environment is here too; TLS, proxies' tunnels
and rotating certificates are in test_kube_transport_tls.py."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import pytest
import uvloop

from policy_scheduler.kube import transport
from policy_scheduler.kube.transport import HttpError, Pool, proxy_for

LOOPS = [
    pytest.param(asyncio.new_event_loop, id="asyncio"),
    pytest.param(uvloop.new_event_loop, id="uvloop"),
]
"""The event loops every connection-opening test runs on: asyncio's, and the operator's."""


class CannedServer:
    """Answers each request with ``answer``; closes the connection after it if ``close``."""

    def __init__(self, answer: bytes, close: bool = False) -> None:
        self.answer = answer
        self.close = close
        self.connections = 0
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                self.requests.append(head + await reader.readexactly(length))
                writer.write(self.answer)
                await writer.drain()
                if self.close:
                    break
        except asyncio.IncompleteReadError:
            pass  # the client closed the connection
        writer.close()


class Server(Protocol):
    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer the requests of one connection."""


@asynccontextmanager
async def listening(server: Server) -> AsyncIterator[str]:
    """The server's URL, while it listens (test_kube_client.py uses it too)."""
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()


@asynccontextmanager
async def serving(server: Server, limit: int = 2) -> AsyncIterator[Pool]:
    async with listening(server) as url:
        pool = Pool(f"{url}/base/", ssl.create_default_context(), limit)
        try:
            yield pool
        finally:
            pool.close()


async def get(pool: Pool) -> tuple[int, bytes]:
    async with pool.request("GET", "/x", {}) as response:
        return response.status, await response.read()


def run(scenario: Any, loop: Callable[[], asyncio.AbstractEventLoop] | None = None) -> None:
    with asyncio.Runner(loop_factory=loop) as runner:
        runner.run(asyncio.wait_for(scenario, timeout=10))


@pytest.mark.parametrize(
    ("answer", "close", "status", "body", "connections"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            False, 200, b"hello", 1, id="a body of known length, on a kept connection",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3;note=x\r\nhel\r\n2\r\nlo\r\n0\r\nX-Trailer: 1\r\n\r\n",
            False, 200, b"hello", 1, id="a chunked body with an extension and a trailer",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\n\r\nhello",
            True, 200, b"hello", 2, id="a body that runs until the server closes",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            True, 200, b"hello", 2, id="the server asks to close",
        ),
        pytest.param(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}",
            False, 201, b"{}", 1, id="an interim 100 Continue is skipped",
        ),
        pytest.param(
            b"HTTP/1.1 204 No Content\r\n\r\n",
            False, 204, b"", 1, id="no body for 204",
        ),
        pytest.param(
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}",
            False, 404, b"{}", 1, id="header names in any case",
        ),
        pytest.param(
            b"HTTP/1.1 200\r\nContent-Length: 5\r\n\r\nhello",
            False, 200, b"hello", 1, id="a status line without a reason",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            False, 200, b"hello", 1, id="Content-Length twice, the same",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding:  Chunked \r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            False, 200, b"hello", 1, id="chunked in any case, with spaces",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: x-plain, chunked\r\n\r\n"
            b"5\r\nhello\r\n0\r\n\r\n",
            False, 200, b"hello", 1, id="chunked as the last of two codings",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: x-plain\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n0\r\n\r\n",
            False, 200, b"hello", 1, id="chunked in a second Transfer-Encoding header",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, x-plain\r\n\r\nhello",
            True, 200, b"hello", 2, id="chunked not last: the body runs until the server closes",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 50\r\n\r\n"
            b"5\r\nhello\r\n0\r\n\r\n",
            False, 200, b"hello", 2,
            id="Transfer-Encoding wins over Content-Length, and the connection is not reused",
        ),
        pytest.param(
            b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello",
            False, 200, b"hello", 2, id="an HTTP/1.0 answer ends its connection",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: x-other, Close\r\n\r\nhello",
            False, 200, b"hello", 2, id="close among the Connection header's tokens",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello!",
            False, 200, b"hello", 2, id="a byte past the answer: the connection is not reused",
        ),
    ],
)  # fmt: skip
def test_an_answer_is_read_by_its_framing(
    answer: bytes, close: bool, status: int, body: bytes, connections: int
) -> None:
    """Two requests in a row: both get the answer, on one connection if the server kept it."""

    async def scenario() -> None:
        server = CannedServer(answer, close)
        async with serving(server) as pool:
            assert await get(pool) == (status, body)
            assert await get(pool) == (status, body)
        assert server.connections == connections

    run(scenario())


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
            transport.CUT_OFF, id="cut off in the body",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-",
            transport.CUT_OFF, id="cut off in the headers",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n",
            transport.CUT_OFF, id="cut off between chunks",
        ),
        pytest.param(
            b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
            "not an HTTP/1.1 status line: 'SSH-2.0-OpenSSH_9.6'", id="not HTTP",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            "not an HTTP header: 'no colon here'", id="a header without a colon",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "a chunk's size is not hexadecimal: b'zz\\r\\n'", id="a chunk size that is not hex",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhelXX",
            "a chunk did not end with CRLF", id="a chunk longer than its size",
        ),
        pytest.param(
            b"HTTP/2 200 OK\r\n\r\n",
            "not an HTTP/1.1 status line: 'HTTP/2 200 OK'", id="another version",
        ),
        pytest.param(
            b"HTTP/1.1 20 OK\r\n\r\n",
            "not an HTTP/1.1 status line: 'HTTP/1.1 20 OK'", id="a status of two digits",
        ),
        pytest.param(
            b"HTTP/1.1 200OK\r\n\r\n",
            "not an HTTP/1.1 status line: 'HTTP/1.1 200OK'", id="no space after the status",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
            "not an HTTP header: 'Content-Length : 5'", id="a space before a header's colon",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\n: 5\r\n\r\n",
            "not an HTTP header: ': 5'", id="a header without a name",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n",
            "not an HTTP header: ' 2'", id="a header folded onto a second line",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
            "not a Content-Length: '+5'", id="a Content-Length with a sign",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello",
            "not a Content-Length: '0x5'", id="a Content-Length not in decimal",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            "Content-Length values disagree: '5, 6'", id="Content-Length twice, different",
        ),
        pytest.param(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!",
            "Content-Length values disagree: '5, 6'", id="two different lengths in one header",
        ),
    ],
)  # fmt: skip
def test_a_broken_answer_is_an_http_error(answer: bytes, error: str) -> None:
    async def scenario() -> None:
        async with serving(CannedServer(answer, close=True)) as pool:
            with pytest.raises(HttpError, match=re.escape(error)):
                await get(pool)

    run(scenario())


def test_the_request_carries_its_headers_length_and_body_under_the_servers_path() -> None:
    async def scenario() -> None:
        server = CannedServer(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        async with (
            serving(server) as pool,
            pool.request("POST", "/api/v1/x?y=1", {"Accept": "a/b"}, b"{}") as answer,
        ):
            assert await answer.read() == b""
        host = server.requests[0].split(b"\r\n")[1].decode()
        assert server.requests == [
            b"POST /base/api/v1/x?y=1 HTTP/1.1\r\n"
            + f"{host}\r\n".encode()
            + b"Accept: a/b\r\nContent-Length: 2\r\n\r\n{}"
        ]
        assert host.startswith("Host: 127.0.0.1:")

    run(scenario())


def test_a_connection_idle_past_the_keepalive_is_not_used_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "KEEPALIVE", 0.0)

    async def scenario() -> None:
        server = CannedServer(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        async with serving(server) as pool:
            await get(pool)
            await get(pool)
        assert server.connections == 2

    run(scenario())


def test_requests_beyond_the_limit_wait_for_a_connection() -> None:
    async def scenario() -> None:
        server = CannedServer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        async with serving(server, limit=1) as pool:
            assert await asyncio.gather(*(get(pool) for _ in range(5))) == [(200, b"ok")] * 5
        assert server.connections == 1

    run(scenario())


def test_a_body_larger_than_the_read_buffer_arrives_whole() -> None:
    """The connection stops reading past HIGH_WATER bytes and resumes as they are read."""
    size = 3 * transport.HIGH_WATER + 7
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)

    async def scenario() -> None:
        answer = f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode() + body
        async with serving(CannedServer(answer)) as pool:
            assert await get(pool) == (200, body)

    run(scenario())


def test_a_check_that_raises_sends_nothing_and_keeps_the_connection() -> None:
    async def scenario() -> None:
        server = CannedServer(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

        def refuse() -> None:
            raise PermissionError("held back")

        async with serving(server) as pool:
            with pytest.raises(PermissionError):
                async with pool.request("POST", "/x", {}, b"{}", before_send=refuse):
                    pass
            await get(pool)
        assert len(server.requests) == 1
        assert server.connections == 1

    run(scenario())


def test_a_server_url_must_be_http_or_https() -> None:
    with pytest.raises(ValueError, match="server 'ftp://h': not an http:// or https:// URL"):
        Pool("ftp://h", ssl.create_default_context(), 1)


def test_a_repeated_header_keeps_every_value() -> None:
    async def scenario() -> None:
        answer = b"HTTP/1.1 200 OK\r\nX-A: 1\r\nX-B: 2\r\nx-a: 3, 4\r\nContent-Length: 0\r\n\r\n"
        async with serving(CannedServer(answer)) as pool, pool.request("GET", "/x", {}) as got:
            assert got.header_values("X-A") == ["1", "3, 4"]
            assert got.header_values("x-c") == []
            assert got.headers["x-a"] == "1, 3, 4"
            assert got.fields == [
                ("x-a", "1"),
                ("x-b", "2"),
                ("x-a", "3, 4"),
                ("content-length", "0"),
            ]

    run(scenario())


def test_each_warning_of_the_server_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """The API server's deprecation warnings, one per header; a header not in the RFC's form is
    logged as it came."""
    answer = (
        b"HTTP/1.1 200 OK\r\n"
        b'Warning: 299 - "policy/v1beta1 PodDisruptionBudget is deprecated"\r\n'
        b'Warning: 299 - "a \\"quoted\\" word", 299 - "a second in the same header"\r\n'
        b"Warning: not in the usual form\r\n"
        b"Content-Length: 0\r\n\r\n"
    )

    async def scenario() -> None:
        for _pool in range(2):
            async with serving(CannedServer(answer)) as pool:
                await get(pool)
                await get(pool)

    with caplog.at_level(logging.WARNING, logger="policy_scheduler.kube.transport"):
        run(scenario())
    texts = [record.getMessage().partition(": ")[2] for record in caplog.records]
    assert texts == 2 * [
        "policy/v1beta1 PodDisruptionBudget is deprecated",
        'a "quoted" word',
        "a second in the same header",
        "not in the usual form",
    ]
    assert {record.levelno for record in caplog.records} == {logging.WARNING}


class ClosingServer:
    """Answers the first request of each connection; then takes the next one and closes the
    connection without a word (``"closed"``), or with a reset (``"reset"``), or after the first
    bytes of an answer (``"cut"``). With ``closing_at`` 1 it does so from the first request."""

    def __init__(self, ending: str, closing_at: int = 2) -> None:
        self.ending = ending
        self.closing_at = closing_at
        self.connections = 0
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        for number in range(1, self.closing_at + 1):
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"Content-Length: (\d+)", head)
            self.requests.append(head + await reader.readexactly(int(length[1]) if length else 0))
            if number < self.closing_at:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        if self.ending == "reset":
            linger = struct.pack("ii", 1, 0)  # closed with linger 0: a reset, not a FIN
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            writer.transport.abort()
            return
        if self.ending == "cut":
            writer.write(b"HTTP/1.1 200 OK\r\n")
            await writer.drain()
        writer.close()


IDEMPOTENT = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]


@pytest.mark.parametrize("ending", ["closed", "reset"])
@pytest.mark.parametrize(
    ("method", "resent"),
    [(method, True) for method in IDEMPOTENT] + [("POST", False), ("PATCH", False)],
)
def test_a_request_on_a_kept_connection_the_server_closed_is_resent_if_idempotent(
    ending: str, method: str, resent: bool
) -> None:
    """Once, on a new connection, with the check run again before it; never a POST or a PATCH,
    which the server may have carried out."""

    async def scenario() -> None:
        server = ClosingServer(ending)
        checks = 0

        def check() -> None:
            nonlocal checks
            checks += 1

        async with serving(server) as pool:
            await get(pool)
            attempt = pool.request(method, "/y", {}, b"{}", before_send=check)
            if resent:
                async with attempt as answer:
                    assert (answer.status, await answer.read()) == (200, b"")
                assert checks == 2
                assert server.connections == 2
                assert [request.split(b" ")[0] for request in server.requests] == [
                    b"GET",
                    method.encode(),
                    method.encode(),
                ]
            else:
                with pytest.raises(HttpError, match=transport.CUT_OFF):
                    async with attempt:
                        pass
                assert checks == 1
                assert server.connections == 1
                assert len(server.requests) == 2

    run(scenario())


@pytest.mark.parametrize(
    ("closing_at", "ending"),
    [
        pytest.param(1, "closed", id="a new connection closed"),
        pytest.param(1, "reset", id="a new connection reset"),
        pytest.param(2, "cut", id="a kept connection closed within the answer"),
    ],
)
def test_a_request_is_not_resent_after_a_new_connection_or_a_partial_answer(
    closing_at: int, ending: str
) -> None:
    """A new connection the server drops says something about the request, not about the
    connection's age; and an answer begun was an answer."""

    async def scenario() -> None:
        server = ClosingServer(ending, closing_at)
        async with serving(server) as pool:
            if closing_at == 2:
                await get(pool)
            with pytest.raises(HttpError, match=transport.CUT_OFF):
                await get(pool)
        assert server.connections == 1
        assert len(server.requests) == closing_at

    run(scenario())


@pytest.mark.parametrize("loop", LOOPS)
def test_every_connection_probes_a_silent_peer(
    loop: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    async def scenario() -> None:
        async with serving(CannedServer(b"HTTP/1.1 204 No Content\r\n\r\n")) as pool:
            await get(pool)
            assert keepalive(pool) == (1, 30, 10, 3)

    run(scenario(), loop)


def keepalive(pool: Pool) -> tuple[int, ...]:
    """The TCP keepalive options of the pool's one idle connection."""
    (connection,) = pool._idle
    assert connection.transport is not None
    sock = connection.transport.get_extra_info("socket")
    return (
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
        sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
    )


HTTPS = "https://api.example.com:6443"
PROXY = "http://proxy:3128"


@pytest.mark.parametrize(
    ("server", "environ", "proxy"),
    [
        pytest.param(HTTPS, {}, None, id="nothing in the environment"),
        pytest.param(HTTPS, {"HTTPS_PROXY": PROXY}, PROXY, id="HTTPS_PROXY for an https server"),
        pytest.param(HTTPS, {"https_proxy": PROXY}, PROXY, id="https_proxy in lower case"),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "https_proxy": "http://other:1"}, PROXY,
            id="the upper-case name first",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": "", "https_proxy": PROXY}, PROXY,
            id="an empty HTTPS_PROXY is not set",
        ),
        pytest.param(HTTPS, {"HTTP_PROXY": PROXY}, None, id="HTTP_PROXY is not for https"),
        pytest.param(
            "http://api.example.com", {"HTTP_PROXY": PROXY, "HTTPS_PROXY": "http://other:1"},
            PROXY, id="HTTP_PROXY for an http server",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": "proxy:3128"}, PROXY, id="a proxy without a scheme is http",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": "http://u:p@proxy:3128"}, "http://u:p@proxy:3128",
            id="the proxy's credentials are kept",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": "socks5://proxy:1080"}, "socks5://proxy:1080",
            id="another scheme is given as it is (the pool refuses it)",
        ),
        pytest.param(
            "https://localhost:6443", {"HTTPS_PROXY": PROXY}, None, id="localhost never",
        ),
        pytest.param(
            "https://127.0.0.1:6443", {"HTTPS_PROXY": PROXY}, None, id="127.0.0.1 never",
        ),
        pytest.param(
            "https://127.8.9.10", {"HTTPS_PROXY": PROXY}, None, id="nothing in 127/8",
        ),
        pytest.param("https://[::1]:6443", {"HTTPS_PROXY": PROXY}, None, id="::1 never"),
        pytest.param(
            "https://[::ffff:127.0.0.1]", {"HTTPS_PROXY": PROXY}, None,
            id="loopback mapped into IPv6 never",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "*"}, None, id="NO_PROXY *",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.example.com"}, None,
            id="NO_PROXY the host",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, None,
            id="NO_PROXY a domain: its subdomains",
        ),
        pytest.param(
            "https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, None,
            id="NO_PROXY a domain: itself",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": ".example.com"}, None,
            id="NO_PROXY .domain: its subdomains",
        ),
        pytest.param(
            "https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": ".example.com"}, PROXY,
            id="NO_PROXY .domain: not itself",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "*.example.com"}, None,
            id="NO_PROXY *.domain: its subdomains",
        ),
        pytest.param(
            "https://example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "*.example.com"}, PROXY,
            id="NO_PROXY *.domain: not itself",
        ),
        pytest.param(
            "https://notexample.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, PROXY,
            id="NO_PROXY a domain: not a name that merely ends like it",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": " other.org , API.Example.COM "}, None,
            id="NO_PROXY a list, with spaces and upper case",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com:6443"}, None,
            id="NO_PROXY a domain with the server's port",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com:443"}, PROXY,
            id="NO_PROXY a domain with another port",
        ),
        pytest.param(
            "https://api.example.com", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com:443"},
            None, id="NO_PROXY a port: https's own when the URL has none",
        ),
        pytest.param(
            "https://10.0.0.1", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.1"}, None,
            id="NO_PROXY an IP address",
        ),
        pytest.param(
            "https://10.0.0.2", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.1"}, PROXY,
            id="NO_PROXY another IP address",
        ),
        pytest.param(
            "https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.1:6443"}, None,
            id="NO_PROXY an IP address with the server's port",
        ),
        pytest.param(
            "https://10.0.0.1:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.0.0.1:443"}, PROXY,
            id="NO_PROXY an IP address with another port",
        ),
        pytest.param(
            "https://10.96.0.1", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.0/12"}, None,
            id="NO_PROXY a CIDR block",
        ),
        pytest.param(
            "https://10.112.0.1", {"HTTPS_PROXY": PROXY, "NO_PROXY": "10.96.0.0/12"}, PROXY,
            id="NO_PROXY a CIDR block: not outside it",
        ),
        pytest.param(
            "https://[fd00::1]:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "fd00::/8"}, None,
            id="NO_PROXY an IPv6 CIDR block",
        ),
        pytest.param(
            "https://[fd00::1]:6443", {"HTTPS_PROXY": PROXY, "NO_PROXY": "[fd00::1]:6443"},
            None, id="NO_PROXY an IPv6 address with a port",
        ),
        pytest.param(
            "https://10.0.0.1", {"HTTPS_PROXY": PROXY, "NO_PROXY": "0.1"}, PROXY,
            id="NO_PROXY a domain never names an IP address",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "no_proxy": "example.com"}, None,
            id="no_proxy in lower case",
        ),
        pytest.param(
            HTTPS, {"HTTPS_PROXY": PROXY, "NO_PROXY": "other.org", "no_proxy": "example.com"},
            PROXY, id="NO_PROXY first",
        ),
    ],
)  # fmt: skip
def test_the_proxy_is_taken_from_the_environment_as_go_takes_it(
    server: str, environ: dict[str, str], proxy: str | None
) -> None:
    assert proxy_for(server, environ) == proxy
