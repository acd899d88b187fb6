"""HTTP/1.1 on the event loop: how the operator's requests reach the API server.

:class:`~policy_scheduler.kube.client.Kube` sends every request through a :class:`Pool`: at most
``limit`` requests in flight, each on a keep-alive connection (TLS, or plain TCP for an
``http://`` server) taken from the pool's idle ones or opened for it. It speaks what the API
server answers: a body of known length, a chunked one (watches), or one that runs until the
server closes; a ``1xx`` interim answer is skipped.

It is not aiohttp's client, on which a request through
:class:`~policy_scheduler.kube.client.Kube` costs 1.6 to 1.7 times the CPU, JSON included
(bench/bench_transport.py: 0.15 against 0.24 ms an event post, 0.10 against 0.17 ms a GET, 16
at once, against kube-apiserver). A bind and its event are two requests per pod, and in a
100-node burst aiohttp's request path takes over a third of the operator's CPU.
What aiohttp does there and this does not need: cookies, redirects, compression, tracing,
multipart bodies.

A request's bytes are written in one call, right after its ``before_send`` check and in the same
step of the event loop, so a check that lets a request go (the leader's fence) is never stale by
the time its first byte leaves. The answer is read from the same connection; the connection
goes back to the pool only once its answer has been read in full, and only if the server keeps
it open; one idle for longer than :data:`KEEPALIVE` is closed rather than reused, before the
server's own idle timeout can race a request sent on it.

What client-go and Go's net/http do for the clusters they run in, this does too:

- A context of :class:`ServerNameContext` (a kubeconfig's ``tls-server-name``) sends a name of
  its own as SNI and checks the certificate against it, for an API server reached by an address
  its certificate does not name; it does so for every TLS client, aiohttp's (Kopf's) too.
- An ``http://`` proxy is asked for a tunnel (``CONNECT``) and TLS runs through it as it would
  without; :func:`proxy_for` finds the proxy in the environment as Go's ``ProxyFromEnvironment``
  does. Only ``http://`` proxies: a TLS or SOCKS proxy is refused when the pool is made rather
  than bypassed.
- ``ssl_context`` may be a function giving the current context (a client certificate that
  rotates), asked before each request: when it gives a new one, the connections opened with the
  old one are closed, idle ones at once and busy ones once their answer is read, so that the
  server sees the new certificate, as client-go closes its connections when its own rotates.
- TCP keepalive on every connection (:data:`TCP_PROBES`): a connection whose server vanished
  without a word (a node lost, a NAT entry dropped) fails in about a minute, where the kernel's
  defaults take two hours; a watch, which sends nothing, learns it no later.
- A server may close an idle connection just as a request is written to it (its idle timeout, a
  restart). When nothing at all came back on a reused connection, an idempotent request is sent
  once more on a new one, its ``before_send`` checked again; a POST or PATCH is not, as it may
  have been carried out and its caller knows what an unknown outcome means.
- Framing is read strictly (RFC 9112), since a misread length puts one answer's bytes into the
  next: a Content-Length must be digits, the same in every copy; Transfer-Encoding wins over it
  and such an answer's connection is not reused (it may be an attempt at smuggling), and chunked
  must be the last coding, else the body runs until the server closes; an HTTP/1.0 answer ends
  its connection. Repeated headers are kept (:meth:`Response.header_values`), and the API server's
  ``Warning`` headers (deprecations) are logged, each text once per pool.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import cast
from urllib.parse import SplitResult, unquote, urlsplit

logger = logging.getLogger(__name__)

KEEPALIVE = 15.0
"""Seconds a connection may sit idle in the pool and still be used (aiohttp's default too)."""
HIGH_WATER = 1 << 20
"""Bytes received and not yet read at which a connection stops reading from its socket."""
MAX_HEAD = 1 << 16
"""Bytes an answer's status line and headers may take."""
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
"""The methods sent again when a reused connection turns out closed. Go's net/http resends only
GET, HEAD and OPTIONS (and TRACE); PUT and DELETE are idempotent too, and the operator's (the
Lease's renewal, a preemption victim's deletion) read a repeat's 409 or 404 as they must."""
TCP_PROBES = (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
"""TCP keepalive: the first probe after 30 s of silence, then one every 10 s, the connection
dropped after 3 unanswered (the options the platform has)."""


class HttpError(Exception):
    """No complete HTTP answer: the connection closed early, what came was not HTTP/1.1, or a
    proxy did not open its tunnel."""


CUT_OFF = "the server closed the connection before its answer was complete"

_STATUS_LINE = re.compile(r"HTTP/1\.([0-9]) ([0-9]{3})(?= |$) ?(.*)")
_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_TOKEN_NAMES: set[str] = set()
"""Header names (in lower case) already found to be tokens, at most :data:`_MAX_TOKEN_NAMES`: the
API server sends the same few in every answer, and a regular expression on each would cost more
than the rest of the parsing."""
_MAX_TOKEN_NAMES = 1024
_WARNING = re.compile(r'[0-9]{3} \S+ "((?:[^"\\]|\\.)*)"')
_ESCAPED = re.compile(r"\\(.)")
_SOCKET_OPTIONS = [
    (socket.IPPROTO_TCP, getattr(socket, name), value)
    for name, value in TCP_PROBES
    if hasattr(socket, name)
]


class _Connection(asyncio.Protocol):
    """One connection's bytes, as the reader of the current answer asks for them."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.idle_since = 0.0
        self.context: ssl.SSLContext | None = None
        """The TLS context the connection was opened with."""
        self.heard = False
        """A byte has come since the last request was sent."""
        self._received = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for level, option, value in _SOCKET_OPTIONS:
                sock.setsockopt(level, option, value)

    def data_received(self, data: bytes) -> None:
        self.heard = True
        self._received += data
        if len(self._received) > HIGH_WATER and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._ended = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    @property
    def reusable(self) -> bool:
        """Open, and nothing has come that no request asked for."""
        return (
            not self._ended
            and not self._received
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def send(self, message: bytes) -> None:
        assert self.transport is not None
        self.heard = False
        self.transport.write(message)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str) -> None:
        """TLS from here on, on the connection as it is (a proxy's tunnel)."""
        assert self.transport is not None
        secured = await asyncio.get_running_loop().start_tls(
            self.transport, self, context, server_hostname=server_hostname
        )
        # Typed as optional, but both asyncio and uvloop give the TLS transport or raise.
        self.transport = cast(asyncio.Transport, secured)

    async def _more(self) -> None:
        """Wait until more bytes have come; :class:`HttpError` if none will."""
        if self._ended:
            raise HttpError(CUT_OFF)
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def read_until(self, separator: bytes, limit: int) -> bytes:
        """The bytes up to and including ``separator``, at most ``limit`` of them."""
        searched = 0
        while (end := self._received.find(separator, searched)) < 0:
            if len(self._received) > limit:
                raise HttpError(f"no {separator!r} within {limit} bytes")
            searched = max(0, len(self._received) - len(separator) + 1)
            await self._more()
        return self._take(end + len(separator))

    async def read_exactly(self, size: int) -> bytes:
        while len(self._received) < size:
            await self._more()
        return self._take(size)

    async def read_some(self) -> bytes:
        """What has come (waiting for at least a byte), or ``b""`` once the server has closed."""
        while not self._received:
            if self._ended:
                return b""
            await self._more()
        return self._take(len(self._received))

    def _take(self, size: int) -> bytes:
        """The first ``size`` bytes received, no longer kept."""
        taken = bytes(self._received[:size])
        del self._received[:size]
        return taken


class Response:
    """An answer's status and headers; its body is read with :meth:`read` or :meth:`chunks`."""

    def __init__(
        self,
        connection: _Connection,
        method: str,
        status: re.Match[str],
        lines: list[str],
        headers: dict[str, str],
    ) -> None:
        minor_version, code, reason = status.groups()
        self.status = status_code = int(code)
        self.reason: str = reason
        self.headers = headers
        """Header names in lower case; a repeated header's values joined by ``", "``, as
        RFC 9110 combines them."""
        self.complete = False
        """The whole body has been read."""
        self._lines = lines
        self._connection = connection
        chunked = False
        remaining: int | None = None
        reusable = minor_version != "0"  # HTTP/1.0 closes
        if "transfer-encoding" in headers:
            chunked = _tokens(headers["transfer-encoding"])[-1:] == ["chunked"]
            # Both framings at once may be an attempt at smuggling (RFC 9112 6.3): the length
            # is ignored, and the connection not trusted with another request.
            reusable = reusable and "content-length" not in headers
        elif (length := headers.get("content-length")) is not None:
            remaining = (
                int(length) if length.isdigit() and length.isascii() else _content_length(length)
            )
        if method == "HEAD" or status_code in (204, 304):
            chunked, remaining = False, 0  # no body, whatever the headers say
        if reusable and "connection" in headers:
            reusable = "close" not in _tokens(headers["connection"])
        self._chunked = chunked
        self._remaining = remaining
        self._reusable = reusable and (chunked or remaining is not None)

    @property
    def fields(self) -> list[tuple[str, str]]:
        """Every header as it came, ``(name, value)``, names in lower case."""
        return _fields(self._lines)

    def header_values(self, name: str) -> list[str]:
        """The values of every copy of the header ``name``, in the order they came."""
        name = name.lower()
        return [value for field, value in self.fields if field == name]

    @property
    def keeps_connection(self) -> bool:
        """The connection can carry another request: this answer's end is known and was read,
        and nothing in it says otherwise (``Connection: close``, HTTP/1.0, two framings)."""
        return self.complete and self._reusable

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body, in the pieces it arrives in."""
        connection = self._connection
        if self._chunked:
            while size := _chunk_size(await connection.read_until(b"\r\n", MAX_HEAD)):
                yield await connection.read_exactly(size)
                if await connection.read_exactly(2) != b"\r\n":
                    raise HttpError("a chunk did not end with CRLF")
            while await connection.read_until(b"\r\n", MAX_HEAD) != b"\r\n":
                pass  # trailers, which no answer of the API server carries
        elif self._remaining is not None:
            while self._remaining:
                piece = await connection.read_some()
                if not piece:
                    raise HttpError(CUT_OFF)
                piece, rest = piece[: self._remaining], piece[self._remaining :]
                if rest:
                    raise HttpError("the server sent more than its Content-Length")
                self._remaining -= len(piece)
                yield piece
        else:
            while piece := await connection.read_some():
                yield piece
        self.complete = True

    async def read(self) -> bytes:
        """The whole body."""
        if self._remaining is not None:
            body = await self._connection.read_exactly(self._remaining)
            self._remaining = 0
            self.complete = True
            return body
        return b"".join([piece async for piece in self.chunks()])


def _tokens(value: str) -> list[str]:
    """A header's comma-separated list, in lower case, without its empty elements."""
    return [token for part in value.lower().split(",") if (token := part.strip(" \t"))]


def _content_length(value: str) -> int:
    """A Content-Length that is not plain digits: copies of the header (or a list in one),
    which must say the same length, else it is a lie."""
    lengths = {part.strip(" \t") for part in value.split(",")}
    if len(lengths) > 1:
        raise HttpError(f"Content-Length values disagree: {value[:80]!r}")
    length = lengths.pop()
    if not (length.isascii() and length.isdigit()):
        raise HttpError(f"not a Content-Length: {length[:80]!r}")
    return int(length)


def _chunk_size(line: bytes) -> int:
    try:
        return int(line.split(b";", 1)[0], 16)
    except ValueError:
        raise HttpError(f"a chunk's size is not hexadecimal: {line[:40]!r}") from None


def _head(raw: bytes) -> tuple[re.Match[str], list[str]]:
    """An answer's status line, parsed, and its header lines."""
    status_line, *lines = raw[:-4].decode("latin-1").split("\r\n")
    status = _STATUS_LINE.fullmatch(status_line)
    if status is None:
        raise HttpError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    return status, lines


async def _answer(connection: _Connection, method: str) -> Response:
    """The status line and headers of the answer to ``method``, past any ``1xx`` interim one."""
    status, lines = _head(await connection.read_until(b"\r\n\r\n", MAX_HEAD))
    while status[2][0] == "1":
        status, lines = _head(await connection.read_until(b"\r\n\r\n", MAX_HEAD))
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise HttpError(f"not an HTTP header: {line[:80]!r}")
        headers[name.lower()] = value.strip(" \t")
    if len(headers) < len(lines):
        headers = {}
        for name, value in _fields(lines):
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    if not headers.keys() <= _TOKEN_NAMES:
        for line in lines:
            if not _TOKEN.fullmatch(line.partition(":")[0]):
                raise HttpError(f"not an HTTP header: {line[:80]!r}")
        if len(_TOKEN_NAMES) < _MAX_TOKEN_NAMES:
            _TOKEN_NAMES.update(headers)
    return Response(connection, method, status, lines, headers)


def _fields(lines: list[str]) -> list[tuple[str, str]]:
    """Each header line as ``(name, value)``, the name in lower case."""
    return [
        (name.lower(), value.strip(" \t"))
        for name, _, value in (line.partition(":") for line in lines)
    ]


def _warning_texts(value: str) -> list[str]:
    """The texts of a ``Warning`` header's warnings (``299 - "text"``), or all of it if it does
    not have that form."""
    return [_ESCAPED.sub(r"\1", text) for text in _WARNING.findall(value)] or [value]


def _redacted(url: SplitResult) -> str:
    """The URL without its password, as Go's ``url.Redacted`` shows it."""
    if url.password is None:
        return url.geturl()
    userinfo, _, host = url.netloc.rpartition("@")
    return url._replace(netloc=f"{userinfo.partition(':')[0]}:xxxxx@{host}").geturl()


class ServerNameContext(ssl.SSLContext):
    """A client TLS context that sends ``server_name`` as SNI and checks the server's certificate
    against it, whatever host the connection was opened to. Every TLS client on the event loop
    (asyncio's, uvloop's, aiohttp's) wraps its connection through :meth:`wrap_bio`, so one
    context serves them all."""

    server_name = ""

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        name = self.server_name or server_hostname
        return super().wrap_bio(incoming, outgoing, server_side, name, session)


def client_context(server_name: str | None = None) -> ssl.SSLContext:
    """A client TLS context (certificates verified), with ``server_name`` as the name to send and
    check instead of the host connected to, if given; trusting nothing yet."""
    context = ServerNameContext(ssl.PROTOCOL_TLS_CLIENT)
    context.server_name = server_name or ""
    return context


class Pool:
    """Keep-alive connections to one server, at most ``limit`` of them in use at once.

    ``ssl_context``: the TLS context for an ``https://`` server, or a function that gives the
    current one (the same object until it changes), asked before each request. ``proxy``: an
    ``http://[user:password@]host:port`` proxy to tunnel through."""

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext],
        limit: int,
        *,
        proxy: str | None = None,
    ) -> None:
        parts = urlsplit(server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server {server!r}: not an http:// or https:// URL with a host")
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = None
        self._current_ssl: Callable[[], ssl.SSLContext] | None = None
        if parts.scheme == "https":
            if isinstance(ssl_context, ssl.SSLContext):
                self._ssl = ssl_context
            else:
                self._current_ssl = ssl_context
                self._ssl = ssl_context()
        self._server_hostname = self._host
        self._host_header = parts.netloc.rpartition("@")[2]
        self._base = parts.path.rstrip("/")
        self._proxy = None if proxy is None else _Proxy(proxy, self._host, self._port)
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []
        self._warned: set[str] = set()
        self._closed = False

    @contextlib.asynccontextmanager
    async def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        *,
        before_send: Callable[[], None] | None = None,
    ) -> AsyncIterator[Response]:
        """Send one request (``target``: the path and query) and give its answer, with its body
        still to read. ``before_send`` runs right before the bytes are written, on a connection
        already open, each time they are: if it raises, nothing is sent."""
        lines = [f"{method} {self._base}{target} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        message = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        async with self._slots:
            connection, response = await self._exchange(method, message, before_send)
            reuse = False
            try:
                yield response
                reuse = response.keeps_connection
            finally:
                self._put_back(connection, reuse)

    async def _exchange(
        self, method: str, message: bytes, before_send: Callable[[], None] | None
    ) -> tuple[_Connection, Response]:
        """``message`` sent, and the head of its answer."""
        fresh = False
        while True:
            connection, reused = await self._connection(fresh)
            if before_send is not None:
                try:
                    before_send()
                except BaseException:
                    self._put_back(connection, True)  # nothing was written on it
                    raise
            connection.send(message)
            try:
                response = await _answer(connection, method)
            except HttpError:
                connection.close()
                # Not a byte back on a connection that had been idle: the server closed it as
                # the request went out, most likely without reading it.
                if reused and not connection.heard and method in IDEMPOTENT:
                    fresh = True
                    continue
                raise
            except BaseException:
                connection.close()
                raise
            if "warning" in response.headers:
                self._warn(response)
            return connection, response

    def _warn(self, response: Response) -> None:
        for value in response.header_values("warning"):
            for text in _warning_texts(value):
                if text not in self._warned:
                    self._warned.add(text)
                    logger.warning("warning from %s: %s", self._host_header, text)

    async def _connection(self, fresh: bool) -> tuple[_Connection, bool]:
        """The most recently used idle connection still open and fresh (unless ``fresh``),
        else a new one; and whether it was an idle one."""
        if self._current_ssl is not None:
            context = self._current_ssl()
            if context is not self._ssl:
                self._ssl = context
                for connection in self._idle:
                    connection.close()
                self._idle.clear()
        now = time.monotonic()
        while self._idle and not fresh:
            connection = self._idle.pop()
            if connection.reusable and now - connection.idle_since < KEEPALIVE:
                return connection, True
            connection.close()
        return await self._open(), False

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        context = self._ssl
        if self._proxy is None:
            _transport, connection = await loop.create_connection(
                _Connection,
                self._host,
                self._port,
                ssl=context,
                server_hostname=self._server_hostname if context is not None else None,
            )
        else:
            _transport, connection = await loop.create_connection(
                _Connection, self._proxy.host, self._proxy.port
            )
            try:
                await self._proxy.tunnel(connection)
                if context is not None:
                    await connection.start_tls(context, self._server_hostname)
            except BaseException:
                connection.close()
                raise
        connection.context = context
        return connection

    def _put_back(self, connection: _Connection, reuse: bool) -> None:
        if reuse and connection.reusable and connection.context is self._ssl and not self._closed:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()

    def close(self) -> None:
        """Close the idle connections now, and those in use once their answer is read."""
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._idle.clear()


class _Proxy:
    """An ``http://`` proxy, and the ``CONNECT`` request for a tunnel to one server through it."""

    def __init__(self, url: str, host: str, port: int) -> None:
        parts = urlsplit(url)
        self.label = _redacted(parts)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"proxy {self.label!r}: only http:// proxies are supported")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        lines = [f"CONNECT {self.target} HTTP/1.1", f"Host: {self.target}"]
        if "@" in parts.netloc:
            credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            basic = base64.b64encode(credentials.encode()).decode("ascii")
            lines.append(f"Proxy-Authorization: Basic {basic}")
        self._request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def tunnel(self, connection: _Connection) -> None:
        """Ask for the tunnel on ``connection`` (to the proxy): :class:`HttpError` unless the
        proxy opens it."""
        connection.send(self._request)
        try:
            status, _lines = _head(await connection.read_until(b"\r\n\r\n", MAX_HEAD))
        except HttpError as error:
            raise HttpError(f"proxy {self.label}: {error}") from None
        if status[2][0] != "2":
            raise HttpError(
                f"proxy {self.label} answered CONNECT {self.target} with {status[0][:80]!r}"
            )
        if not connection.reusable:
            raise HttpError(
                f"proxy {self.label}: the tunnel to {self.target} is closed or not clean"
            )


def proxy_for(server: str, environ: Mapping[str, str]) -> str | None:
    """The proxy for ``server`` by ``environ``, as Go's ``net/http.ProxyFromEnvironment`` (which
    client-go uses) reads it: ``HTTPS_PROXY`` or ``https_proxy`` for an ``https://`` server,
    ``HTTP_PROXY`` or ``http_proxy`` for an ``http://`` one; none for localhost, a loopback
    address or a host ``NO_PROXY`` (or ``no_proxy``) names. A proxy given as ``host[:port]`` is
    ``http://host[:port]``."""
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or parts.hostname is None:
        return None
    # The upper-case name first, as in Go's standard library (the copy of golang.org/x/net it
    # vendors); x/net's own recent releases read the lower-case one first.
    name = f"{parts.scheme}_proxy"
    proxy = environ.get(name.upper()) or environ.get(name)
    if not proxy:
        return None
    no_proxy = environ.get("NO_PROXY") or environ.get("no_proxy") or ""
    port = str(parts.port or (443 if parts.scheme == "https" else 80))
    if _bypassed(parts.hostname, port, no_proxy):
        return None
    given = urlsplit(proxy)
    return proxy if given.scheme and given.netloc else f"http://{proxy}"


def _bypassed(host: str, port: str, no_proxy: str) -> bool:
    """Whether requests to ``host:port`` go straight to it: Go's httpproxy ``useProxy``, negated.
    ``no_proxy`` is a comma-separated list of ``*`` (every host), IP addresses and CIDR blocks,
    and domains (a domain matches itself and its subdomains, ``.domain`` and ``*.domain`` its
    subdomains alone), each but ``*`` with an optional ``:port``."""
    host = host.lower()
    address = _ip(host)
    if host == "localhost" or (address is not None and address.is_loopback):
        return True
    for element in no_proxy.split(","):
        entry = element.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if "/" in entry:
            with contextlib.suppress(ValueError):
                if address is not None and address in ipaddress.ip_network(entry, strict=False):
                    return True
            continue
        entry_host, entry_port = _host_and_port(entry)
        if entry_port not in ("", port) or not entry_host:
            continue
        entry_address = _ip(entry_host)
        if entry_address is not None:
            if entry_address == address:
                return True
            continue
        if address is not None:
            continue  # a domain never names an IP address
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        suffix = entry_host if entry_host.startswith(".") else f".{entry_host}"
        if host == entry_host or host.endswith(suffix):
            return True
    return False


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as an IP address (an IPv4-mapped IPv6 one as IPv4, as Go compares them), or None
    for a name."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _host_and_port(entry: str) -> tuple[str, str]:
    """A ``NO_PROXY`` entry's host and port (``""`` if it has none), as Go's SplitHostPort cuts
    them: an IPv6 address has its port only in brackets."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest.removeprefix(":")
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""
