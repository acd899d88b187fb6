"""The HTTP/1.1 transport over TLS: the name it checks, proxies' tunnels, rotating certificates.

Real TLS servers on 127.0.0.1, with a throwaway CA and certificates made by the ``openssl`` CLI:
the server's certificate names ``kubernetes.internal`` only, so a connection to 127.0.0.1 gets
through only with a context that sends that name (``transport.client_context``, as a
kubeconfig's ``tls-server-name`` makes it). The servers record the name each
client sent (SNI) and the certificate it presented; the proxy is a small CONNECT proxy that
records what it was asked and tunnels to 127.0.0.1 alone. Each test runs on asyncio's event loop
and on uvloop, the operator's."""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_kube_transport import LOOPS, CannedServer, get, keepalive, run

from policy_scheduler.kube import transport
from policy_scheduler.kube.transport import HttpError, Pool

SERVER_NAME = "kubernetes.internal"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

Loop = Callable[[], asyncio.AbstractEventLoop]


@dataclass(frozen=True)
class Pki:
    """A CA, a server certificate for :data:`SERVER_NAME` and two client certificates."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.crt"

    def cert(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.crt", self.dir / f"{name}.key"


def openssl(directory: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl(
        directory, "req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
        "-subj", "/CN=throwaway test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign",
    )  # fmt: skip
    leaves = {
        "server": f"subjectAltName=DNS:{SERVER_NAME}\nextendedKeyUsage=serverAuth\n",
        "client-a": "extendedKeyUsage=clientAuth\n",
        "client-b": "extendedKeyUsage=clientAuth\n",
    }
    for name, extensions in leaves.items():
        (directory / f"{name}.ext").write_text(
            extensions + "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
        )
        openssl(
            directory, "req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}",
        )  # fmt: skip
        openssl(
            directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}.crt",
        )  # fmt: skip
    return Pki(directory)


class TlsServer(CannedServer):
    """A :class:`CannedServer` over TLS that records, per connection, the name the client sent
    (None: none) and the common name of its certificate (when it asks for one); and which
    connections the client closed."""

    def __init__(self, pki: Pki, answer: bytes = OK, client_certs: bool = False) -> None:
        super().__init__(answer)
        self.names: list[str | None] = []
        self.clients: list[str] = []
        self.ended: list[str] = []
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(*pki.cert("server"))
        if client_certs:
            self.context.load_verify_locations(pki.ca)
            self.context.verify_mode = ssl.CERT_REQUIRED
        self.context.sni_callback = self._sni

    def _sni(self, _socket: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
        self.names.append(name)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        certificate = writer.get_extra_info("peercert") or {}
        client = dict(pair[0] for pair in certificate.get("subject", ())).get("commonName", "")
        self.clients.append(client)
        await super().serve(reader, writer)
        self.ended.append(client)


async def until(condition: Callable[[], bool]) -> None:
    """Until ``condition()`` holds: a server sees a close a little after the client's."""
    while not condition():
        await asyncio.sleep(0.01)


@asynccontextmanager
async def tls_listening(server: TlsServer) -> AsyncIterator[str]:
    """The server's URL, while it listens; then until the client has closed every connection
    (else the event loop would end with the server's half of them open)."""
    listener = await asyncio.start_server(server.serve, "127.0.0.1", 0, ssl=server.context)
    try:
        yield f"https://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()
        await until(lambda: len(server.ended) == len(server.clients))


class ConnectProxy:
    """An HTTP proxy that tunnels (CONNECT) to 127.0.0.1, and nowhere else; with a ``refusal``
    (a status and reason), it refuses every tunnel so. It records the head of each request."""

    def __init__(self, refusal: str | None = None) -> None:
        self.refusal = refusal
        self.requests: list[bytes] = []
        self.tunnels = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.tunnels += 1
        try:
            await self._serve(reader, writer)
        finally:
            self.tunnels -= 1

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head)
        target = re.fullmatch(rb"CONNECT 127\.0\.0\.1:(\d+) HTTP/1\.1", head.split(b"\r\n")[0])
        if self.refusal is not None or target is None:
            writer.write(f"HTTP/1.1 {self.refusal}\r\nContent-Length: 0\r\n\r\n".encode())
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection(
            "127.0.0.1", int(target[1])
        )
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    @asynccontextmanager
    async def listening(self) -> AsyncIterator[int]:
        """The proxy's port, while it listens; then until every tunnel is closed."""
        listener = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        try:
            yield listener.sockets[0].getsockname()[1]
        finally:
            listener.close()
            await until(lambda: not self.tunnels)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1 << 16):
        writer.write(data)
        await writer.drain()
    writer.close()


def client_context(
    pki: Pki, client: str | None = None, server_name: str | None = SERVER_NAME
) -> ssl.SSLContext:
    context = transport.client_context(server_name)
    context.load_verify_locations(cafile=pki.ca)
    if client is not None:
        context.load_cert_chain(*pki.cert(client))
    return context


@asynccontextmanager
async def pool_for(
    url: str, context: ssl.SSLContext | Callable[[], ssl.SSLContext], **options: str | None
) -> AsyncIterator[Pool]:
    pool = Pool(url, context, 2, **options)
    try:
        yield pool
    finally:
        pool.close()


@pytest.mark.parametrize("loop", LOOPS)
def test_the_server_name_is_sent_and_checked_instead_of_the_urls_host(pki: Pki, loop: Loop) -> None:
    async def scenario() -> None:
        server = TlsServer(pki)
        async with tls_listening(server) as url:
            async with pool_for(url, client_context(pki)) as pool:
                assert await get(pool) == (200, b"ok")
                assert await get(pool) == (200, b"ok")
                assert keepalive(pool) == (1, 30, 10, 3)
            assert server.names == [SERVER_NAME]
            async with pool_for(url, client_context(pki, server_name=None)) as pool:
                with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
                    await get(pool)
            assert server.names == [SERVER_NAME, None]  # no SNI for an IP address

    run(scenario(), loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_tls_through_a_proxy_is_checked_as_without_it(pki: Pki, loop: Loop) -> None:
    """One tunnel, kept for the next request; the credentials of the proxy's URL, decoded."""

    async def scenario() -> None:
        server, proxy = TlsServer(pki), ConnectProxy()
        async with tls_listening(server) as url, proxy.listening() as port:
            proxy_url = f"http://bench%20user:p%40ss@127.0.0.1:{port}"
            async with pool_for(url, client_context(pki), proxy=proxy_url) as pool:
                assert await get(pool) == (200, b"ok")
                assert await get(pool) == (200, b"ok")
                assert keepalive(pool) == (1, 30, 10, 3)
            authority = url.removeprefix("https://")
            credentials = base64.b64encode(b"bench user:p@ss").decode()
            assert proxy.requests == [
                f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
                f"Proxy-Authorization: Basic {credentials}\r\n\r\n".encode()
            ]
            assert server.names == [SERVER_NAME]
            assert server.requests[0].startswith(f"GET /x HTTP/1.1\r\nHost: {authority}".encode())
            async with pool_for(
                url, client_context(pki, server_name=None), proxy=proxy_url
            ) as pool:
                with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
                    await get(pool)

    run(scenario(), loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_plain_http_server_through_a_proxy(loop: Loop) -> None:
    """A tunnel too, with no credentials to send."""

    async def scenario() -> None:
        server, proxy = CannedServer(OK), ConnectProxy()
        listener = await asyncio.start_server(server.serve, "127.0.0.1", 0)
        authority = f"127.0.0.1:{listener.sockets[0].getsockname()[1]}"
        async with proxy.listening() as port:
            proxy_url = f"http://127.0.0.1:{port}"
            async with pool_for(
                f"http://{authority}", ssl.create_default_context(), proxy=proxy_url
            ) as pool:
                assert await get(pool) == (200, b"ok")
        listener.close()
        assert proxy.requests == [
            f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()
        ]

    run(scenario(), loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_proxy_that_refuses_the_tunnel_is_an_http_error(pki: Pki, loop: Loop) -> None:
    async def scenario() -> None:
        proxy = ConnectProxy("407 Proxy Authentication Required")
        async with proxy.listening() as port:
            proxy_url = f"http://user:secret@127.0.0.1:{port}"
            async with pool_for(
                "https://127.0.0.1:6443", client_context(pki), proxy=proxy_url
            ) as pool:
                with pytest.raises(HttpError) as refused:
                    await get(pool)
        assert str(refused.value) == (
            f"proxy http://user:xxxxx@127.0.0.1:{port} answered CONNECT 127.0.0.1:6443 with "
            "'HTTP/1.1 407 Proxy Authentication Required'"
        )

    run(scenario(), loop)


@pytest.mark.parametrize(
    ("proxy", "shown"),
    [
        pytest.param("https://proxy:3128", "https://proxy:3128", id="https"),
        pytest.param(
            "socks5://user:secret@proxy:1080", "socks5://user:xxxxx@proxy:1080", id="socks5"
        ),
        pytest.param("proxy:3128", "proxy:3128", id="no scheme"),
        pytest.param("http://:3128", "http://:3128", id="no host"),
    ],
)
def test_only_an_http_proxy_is_accepted(pki: Pki, proxy: str, shown: str) -> None:
    message = f"proxy {shown!r}: only http:// proxies are supported"
    with pytest.raises(ValueError, match=re.escape(message)):
        Pool("https://127.0.0.1:6443", client_context(pki), 1, proxy=proxy)


class Rotating:
    """A client certificate that rotates: the context of the one in use."""

    def __init__(self, pki: Pki) -> None:
        self.contexts = {name: client_context(pki, name) for name in ("client-a", "client-b")}
        self.current = "client-a"

    def __call__(self) -> ssl.SSLContext:
        return self.contexts[self.current]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_rotated_client_certificate_closes_the_idle_connections(pki: Pki, loop: Loop) -> None:
    async def scenario() -> None:
        server, certificate = TlsServer(pki, client_certs=True), Rotating(pki)
        async with tls_listening(server) as url:
            async with pool_for(url, certificate) as pool:
                await get(pool)
                await get(pool)
                certificate.current = "client-b"
                await get(pool)
                await until(lambda: server.ended == ["client-a"])
                await get(pool)
            assert server.clients == ["client-a", "client-b"]

    run(scenario(), loop)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_rotated_client_certificate_closes_a_busy_connection_after_its_answer(
    pki: Pki, loop: Loop
) -> None:
    async def scenario() -> None:
        server, certificate = TlsServer(pki, client_certs=True), Rotating(pki)
        async with tls_listening(server) as url:
            async with pool_for(url, certificate) as pool:
                async with pool.request("GET", "/x", {}) as busy:
                    certificate.current = "client-b"
                    assert await get(pool) == (200, b"ok")
                    assert await busy.read() == b"ok"
                await until(lambda: server.ended == ["client-a"])
                assert await get(pool) == (200, b"ok")
            assert server.clients == ["client-a", "client-b"]

    run(scenario(), loop)
