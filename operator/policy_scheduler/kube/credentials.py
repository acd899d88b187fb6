"""Who the operator is to the API server, and where that server is: loaded once, kept current.

:func:`load` reads the identity as kubectl does: ``--kubeconfig``, else every file of
``$KUBECONFIG`` merged (the first file to name a cluster, user or context, or to set
``current-context``, wins), else ``~/.kube/config``, else the pod's service account. The result,
:class:`Credentials`, is the one identity of the process: the scheduler's client, Kopf's (through
:mod:`policy_scheduler.kube.login`) and ``explain`` all ask it for the ``Authorization`` header
of each request and the TLS context of each new connection, so that what one client refreshes
every client uses.

What a kubeconfig's user can say, and how each stays current:

- ``token``: sent as it is. ``tokenFile`` (and the service account's projected token, which the
  kubelet rotates): read again whenever the file changes, checked at most every
  :data:`FILE_CHECK` seconds (client-go reads its token file again every minute; rotated tokens
  of a few seconds' life need sooner).
- ``exec``: the credential plugin of managed clusters (``aws eks get-token``,
  ``gke-gcloud-auth-plugin``, ``kubelogin``), API ``client.authentication.k8s.io/v1`` or
  ``v1beta1``. Run without a terminal, with ``KUBERNETES_EXEC_INFO`` (and the cluster, with
  ``provideClusterInfo``), as a subprocess of the event loop so that no request waits on it
  but those that need its answer. Its token or client certificate is used until shortly before
  its ``expirationTimestamp`` (:func:`refresh_margin`), then it runs again.
- ``auth-provider: oidc``: the ``id-token`` until shortly before its ``exp``, then a new one from
  the issuer's token endpoint with the ``refresh-token``, both written back into the kubeconfig
  as kubectl writes them (a kubeconfig that cannot be written is said once; the new tokens are
  used anyway). ``gcp`` and ``azure`` were removed from Kubernetes' clients: refused, naming the
  exec plugin that replaced each.
- ``client-certificate`` / ``client-key`` files: loaded again when either changes (a rotated
  certificate), which starts new connections with it (the transport closes the idle ones).
- ``username`` / ``password``: basic authentication.

A request refused with 401 tells :meth:`Credentials.refused`, and the next one fetches afresh
(a plugin run again, a file read again, an OIDC refresh). What cannot work is said at
:func:`load`, as one line naming the file, the entry and the field (:class:`CredentialsError`):
the command line exits on it, rather than every request failing later.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import math
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

import orjson
import yaml

from policy_scheduler.kube.transport import HttpError, Pool, client_context, proxy_for
from policy_scheduler.manifests import ManifestError, yaml_documents

logger = logging.getLogger(__name__)

DEFAULT_KUBECONFIG = Path("~/.kube/config")
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where a pod finds its service account's token, CA and namespace."""

FILE_CHECK = 1.0
"""Seconds between two looks at a token or certificate file for a new version."""
MARGIN = 10.0
"""Seconds before its expiry that a credential is replaced, at most (client-go's OIDC margin)."""
MARGIN_SHARE = 0.2
"""...and at most this share of its lifetime, so that a credential of a few seconds is used too."""
EXEC_TIMEOUT = 60.0
"""Seconds an exec plugin may take (``aws eks get-token`` may sign in first)."""
EXEC_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
REMOVED_PROVIDERS = {
    "gcp": "gke-gcloud-auth-plugin",
    "azure": "kubelogin",
}
"""Auth providers removed from Kubernetes' clients in 1.26, and the exec plugin for each."""


class CredentialsError(Exception):
    """The identity cannot be loaded or refreshed; the message says where and why, in one line."""


Fetch = Callable[[str, bytes | None, Mapping[str, str], bytes | None], Awaitable[tuple[int, bytes]]]
"""``fetch(url, ca, headers, body)``: an OIDC issuer's answer (status, body) to a GET, or to a
POST of ``body``; the tests give their own."""


def refresh_margin(lifetime: float) -> float:
    """Seconds before expiry to replace a credential that was valid for ``lifetime`` seconds."""
    return min(MARGIN, max(lifetime, 0.0) * MARGIN_SHARE)


@dataclass(frozen=True)
class Target:
    """The API server and how to reach it: TLS, the name to check its certificate against
    (kubeconfig ``tls-server-name``), the proxy (``proxy-url``, else the environment's)."""

    server: str
    ca: bytes | None
    """The CA bundle (PEM) the server's certificate must chain to; None: the system's."""
    insecure: bool = False
    server_name: str | None = None
    proxy: str | None = None
    namespace: str = "default"
    """The context's namespace (the pod's, in a cluster): what ``explain`` defaults to."""
    source: str = ""
    """Where the identity came from, for messages: the files and context, or the pod's account."""


@dataclass(frozen=True)
class Grant:
    """What an authenticator gave: the header to send (or none), and until when."""

    authorization: str | None
    expires: datetime | None = None
    """When the credential stops working; None: not known (used until refused)."""
    recheck: float = math.inf
    """Seconds after which to ask the authenticator again even if nothing expired (a file)."""
    certificate: tuple[bytes, bytes] | None = None
    """A client certificate and key (PEM) the authenticator gave (an exec plugin may)."""


class Authenticator(Protocol):
    """One way of getting the ``Authorization`` header: a kubeconfig user's method."""

    async def grant(self, refused: bool) -> Grant:
        """The credential to use now; ``refused``: the last one was refused (401)."""
        ...


class _FileStamp:
    """Tells whether a file has a new version: its inode, size or modification changed."""

    def __init__(self, *paths: Path) -> None:
        self.paths = paths
        self._stamp = self._read()

    def _read(self) -> tuple[tuple[int, int, int], ...]:
        stamps = []
        for path in self.paths:
            try:
                status = path.stat()
            except OSError:
                stamps.append((0, 0, 0))
            else:
                stamps.append((status.st_ino, status.st_size, status.st_mtime_ns))
        return tuple(stamps)

    def changed(self) -> bool:
        stamp = self._read()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        return True


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise CredentialsError(f"cannot read {what} {path}: {error.strerror or error}") from None


@dataclass
class StaticToken:
    """A bearer token, or basic authentication, that never changes."""

    authorization: str

    async def grant(self, refused: bool) -> Grant:
        return Grant(self.authorization)


@dataclass
class TokenFile:
    """A bearer token in a file that something else rotates (the kubelet, a sidecar)."""

    path: Path

    async def grant(self, refused: bool) -> Grant:
        token = _read(self.path, "token file").decode().strip()
        if not token:
            raise CredentialsError(f"token file {self.path} is empty")
        return Grant(f"Bearer {token}", recheck=FILE_CHECK)


def _bearer(token: str) -> str:
    return f"Bearer {token}"


def _timestamp(text: object, what: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise CredentialsError(f"{what}: {text!r} is not an RFC 3339 time") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


@dataclass
class ExecPlugin:
    """A client-go credential plugin (``users[].user.exec``)."""

    command: str
    args: Sequence[str]
    env: Mapping[str, str]
    api_version: str
    where: str
    """The kubeconfig entry, for messages: ``FILE: users[NAME].user.exec``."""
    cwd: Path
    install_hint: str = ""
    cluster: Mapping[str, Any] | None = None
    """What ``provideClusterInfo`` passes the plugin, else None."""

    def exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = dict(self.cluster)
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    async def grant(self, refused: bool) -> Grant:
        environment = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self.exec_info()}
        try:
            process = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=environment,
                cwd=self.cwd,
            )
        except OSError as error:
            hint = f" ({self.install_hint.strip()})" if self.install_hint.strip() else ""
            raise CredentialsError(
                f"{self.where}: cannot run {self.command}: {error.strerror or error}{hint}"
            ) from None
        try:
            async with asyncio.timeout(EXEC_TIMEOUT):
                out, err = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise CredentialsError(
                f"{self.where}: {self.command} gave no credential within {EXEC_TIMEOUT:g} s"
            ) from None
        if process.returncode != 0:
            said = err.decode(errors="replace").strip().splitlines()
            raise CredentialsError(
                f"{self.where}: {self.command} exited with {process.returncode}"
                + (f": {said[-1][:300]}" if said else "")
            )
        return self._parse(out, received=datetime.now(UTC))

    def _parse(self, out: bytes, received: datetime) -> Grant:
        what = f"{self.where}: {self.command}'s ExecCredential"
        try:
            credential = orjson.loads(out)
        except orjson.JSONDecodeError:
            raise CredentialsError(f"{what} is not JSON: {out[:80]!r}") from None
        if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
            raise CredentialsError(f"{what}: kind is not ExecCredential")
        if credential.get("apiVersion") != self.api_version:
            raise CredentialsError(
                f"{what}: apiVersion {credential.get('apiVersion')!r} is not the "
                f"kubeconfig's {self.api_version}"
            )
        status = credential.get("status")
        if not isinstance(status, dict):
            raise CredentialsError(f"{what} has no status")
        expires = None
        if status.get("expirationTimestamp"):
            expires = _timestamp(status["expirationTimestamp"], f"{what}: expirationTimestamp")
        certificate = None
        if status.get("clientCertificateData") or status.get("clientKeyData"):
            if not (status.get("clientCertificateData") and status.get("clientKeyData")):
                raise CredentialsError(
                    f"{what}: clientCertificateData and clientKeyData come together"
                )
            certificate = (
                str(status["clientCertificateData"]).encode(),
                str(status["clientKeyData"]).encode(),
            )
        token = status.get("token")
        if not token and certificate is None:
            raise CredentialsError(f"{what} has neither a token nor a client certificate")
        return Grant(_bearer(str(token)) if token else None, expires, certificate=certificate)


def _jwt_claims(token: str) -> dict[str, Any]:
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a JWT")
    payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
    claims = orjson.loads(payload)
    if not isinstance(claims, dict):
        raise ValueError("its claims are not an object")
    return claims


@dataclass
class Oidc:
    """The ``oidc`` auth provider: an ID token refreshed with a refresh token, written back."""

    config: dict[str, str]
    where: str
    """The kubeconfig entry, for messages."""
    persist: Callable[[Mapping[str, str]], None]
    """Writes the provider's config back into the kubeconfig."""
    fetch: Fetch
    _unsaved: bool = field(default=False, init=False)

    def _expiry(self, token: str) -> tuple[datetime, float] | None:
        try:
            claims = _jwt_claims(token)
        except (ValueError, binascii.Error, orjson.JSONDecodeError) as error:
            raise CredentialsError(f"{self.where}: id-token: {error}") from None
        if not isinstance(claims.get("exp"), int | float):
            return None
        expires = datetime.fromtimestamp(claims["exp"], UTC)
        issued = claims.get("iat")
        lifetime = claims["exp"] - issued if isinstance(issued, int | float) else math.inf
        return expires, lifetime

    def _usable(self, token: str) -> tuple[bool, datetime | None]:
        found = self._expiry(token)
        if found is None:
            return True, None
        expires, lifetime = found
        left = (expires - datetime.now(UTC)).total_seconds()
        return left > refresh_margin(lifetime), expires

    async def grant(self, refused: bool) -> Grant:
        token = self.config.get("id-token", "")
        if token and not refused:
            usable, expires = self._usable(token)
            if usable:
                return Grant(_bearer(token), expires)
        token = await self._refresh()
        return Grant(_bearer(token), self._usable(token)[1])

    def _ca(self) -> bytes | None:
        if self.config.get("idp-certificate-authority-data"):
            return _base64(
                self.config["idp-certificate-authority-data"],
                f"{self.where}.config.idp-certificate-authority-data",
            )
        if self.config.get("idp-certificate-authority"):
            return _read(Path(self.config["idp-certificate-authority"]), "OIDC issuer's CA")
        return None

    async def _refresh(self) -> str:
        refresh_token = self.config.get("refresh-token")
        issuer = self.config.get("idp-issuer-url", "").rstrip("/")
        if not refresh_token or not issuer:
            raise CredentialsError(
                f"{self.where}: the id-token has expired and there is no refresh-token and "
                "idp-issuer-url to get another"
            )
        ca = self._ca()
        status, body = await self.fetch(
            f"{issuer}/.well-known/openid-configuration", ca, {"Accept": "application/json"}, None
        )
        try:
            token_url = str(orjson.loads(body)["token_endpoint"]) if status == 200 else ""
        except (orjson.JSONDecodeError, KeyError, TypeError):
            token_url = ""
        if not token_url:
            raise CredentialsError(
                f"{self.where}: {issuer}/.well-known/openid-configuration gave no "
                f"token_endpoint (status {status})"
            )
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        client_id = self.config.get("client-id", "")
        if self.config.get("client-secret"):
            pair = f"{_form_quote(client_id)}:{_form_quote(self.config['client-secret'])}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["client_id"] = client_id
        encoded = "&".join(f"{k}={_form_quote(v)}" for k, v in form.items()).encode()
        status, body = await self.fetch(token_url, ca, headers, encoded)
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError:
            answer = {}
        if status != 200 or not isinstance(answer, dict) or not answer.get("id_token"):
            said = answer.get("error_description") or answer.get("error") if answer else None
            raise CredentialsError(
                f"{self.where}: refreshing the id-token at {token_url} failed (status {status}"
                + (f": {said}" if said else "")
                + ")"
            )
        self.config["id-token"] = str(answer["id_token"])
        if answer.get("refresh_token"):
            self.config["refresh-token"] = str(answer["refresh_token"])
        try:
            self.persist(self.config)
            self._unsaved = False
        except OSError as error:
            if not self._unsaved:
                logger.warning(
                    "%s: could not write the refreshed tokens back (%s); using them anyway, "
                    "but a restart will start from the old refresh-token",
                    self.where,
                    error.strerror or error,
                )
            self._unsaved = True
        return self.config["id-token"]


def _form_quote(text: str) -> str:
    return quote(text, safe="")


def _base64(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CredentialsError(f"{where}: not base64") from None


class Credentials:
    """The process's one identity to the API server: :attr:`target` says where and how to
    connect, :meth:`authorization` what to send, :meth:`ssl_context` the TLS of new
    connections."""

    def __init__(
        self,
        target: Target,
        authenticator: Authenticator | None,
        certificate: tuple[bytes, bytes] | None = None,
        certificate_files: tuple[Path, Path] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self._authenticator = authenticator
        self._certificate = certificate
        self._certificate_files = _FileStamp(*certificate_files) if certificate_files else None
        self._certificate_checked = -math.inf
        self._clock = clock
        self._context: ssl.SSLContext | None = None
        self._header: str | None = None
        self._valid_until = -math.inf
        self.expires: datetime | None = None
        """When the current credential expires, if it says (Kopf's login asks)."""
        self._refused: str | None = None
        self._lock = asyncio.Lock()

    async def authorization(self) -> str | None:
        """The ``Authorization`` header for a request sent now (None: no header). Fetched again
        when the last one is due for replacement or was refused; :class:`CredentialsError`
        when that fails."""
        if self._authenticator is None:
            return None
        if self._clock() < self._valid_until:
            return self._header
        async with self._lock:
            now = self._clock()
            if now < self._valid_until:
                return self._header
            grant = await self._authenticator.grant(
                self._refused is not None and self._refused == self._header
            )
            self._refused = None
            self._header = grant.authorization
            self.expires = grant.expires
            valid = grant.recheck
            if grant.expires is not None:
                left = (grant.expires - datetime.now(UTC)).total_seconds()
                valid = min(valid, left - refresh_margin(left))
            self._valid_until = now + max(valid, 0.0)
            if grant.certificate is not None and grant.certificate != self._certificate:
                self._certificate = grant.certificate
                self._context = None
            return self._header

    def refused(self, authorization: str | None) -> None:
        """A request sent with ``authorization`` was refused as unauthenticated (401): the next
        :meth:`authorization` fetches anew. Said once however many requests were refused with
        the same credential."""
        if authorization == self._header and self._refused != authorization:
            self._refused = authorization
            self._valid_until = -math.inf

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context for a new connection: a new one once the client certificate has
        changed (its files rotated, or an exec plugin gave another)."""
        files = self._certificate_files
        if files is not None:
            now = self._clock()
            if now - self._certificate_checked >= FILE_CHECK:
                self._certificate_checked = now
                if files.changed():
                    self._context = None
        if self._context is None:
            self._context = self._build_context()
        return self._context

    def _build_context(self) -> ssl.SSLContext:
        target = self.target
        context = client_context(target.server_name)
        if target.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif target.ca is not None:
            try:
                context.load_verify_locations(cadata=target.ca.decode("ascii", "replace"))
            except ssl.SSLError as error:
                raise CredentialsError(
                    f"{target.source}: the certificate authority is not PEM: {error}"
                ) from None
        else:
            context.load_default_certs()
        certificate = self._certificate
        if self._certificate_files is not None:
            cert_path, key_path = self._certificate_files.paths
            certificate = (
                _read(cert_path, "client certificate"),
                _read(key_path, "client key"),
            )
        if certificate is not None:
            _load_certificate(context, *certificate, where=target.source)
        return context


def _load_certificate(context: ssl.SSLContext, cert: bytes, key: bytes, where: str) -> None:
    """Load a client certificate given as PEM bytes: Python's ssl takes only files, so they are
    written to a private directory and removed at once."""
    with tempfile.TemporaryDirectory(prefix="policy-scheduler-") as directory:
        cert_path, key_path = Path(directory, "tls.crt"), Path(directory, "tls.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as out:
                out.write(data)
        try:
            context.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as error:
            raise CredentialsError(
                f"{where}: the client certificate and key do not load: {error}"
            ) from None


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass
class _Entry:
    """A named cluster, user or context of a kubeconfig, with the file it came from."""

    value: dict[str, Any]
    file: Path


@dataclass
class _Merged:
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current: str = ""
    files: list[Path] = field(default_factory=list)


_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))


def _merge(files: Sequence[Path]) -> _Merged:
    merged = _Merged()
    for file in files:
        try:
            documents = yaml_documents(file)
        except ManifestError as error:
            raise CredentialsError(str(error)) from None
        document = documents[0] if documents and documents[0] is not None else {}
        if not isinstance(document, dict):
            raise CredentialsError(f"{file}: not a kubeconfig (a YAML mapping)")
        merged.files.append(file)
        for plural, singular in _SECTIONS:
            entries = document.get(plural) or []
            if not isinstance(entries, list):
                raise CredentialsError(f"{file}: {plural} is not a list")
            for index, entry in enumerate(entries):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise CredentialsError(f"{file}: {plural}[{index}] has no name")
                body = entry.get(singular) or {}
                if not isinstance(body, dict):
                    raise CredentialsError(
                        f"{file}: {plural}[{entry['name']}].{singular} is not a mapping"
                    )
                getattr(merged, plural).setdefault(entry["name"], _Entry(body, file))
        if not merged.current and isinstance(document.get("current-context"), str):
            merged.current = document["current-context"]
    return merged


def kubeconfig_files(
    kubeconfig: str | None, environ: Mapping[str, str], home: Path
) -> list[Path] | None:
    """The kubeconfig files to merge, as kubectl finds them; None: none, use the pod's
    account."""
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            raise CredentialsError(f"--kubeconfig {kubeconfig}: no such file")
        return [path]
    listed = [Path(p).expanduser() for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        # kubectl skips the files of $KUBECONFIG that do not exist.
        existing = [p for p in listed if p.is_file()]
        if not existing:
            raise CredentialsError(
                f"$KUBECONFIG names no file that exists: {environ['KUBECONFIG']}"
            )
        return existing
    default = home / ".kube" / "config"
    return [default] if default.is_file() else None


def _resolve(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _file_or_data(
    body: Mapping[str, Any], key: str, base: Path, where: str, what: str
) -> bytes | None:
    data = body.get(f"{key}-data")
    if data:
        return _base64(str(data), f"{where}.{key}-data")
    if body.get(key):
        return _read(_resolve(str(body[key]), base), what)
    return None


def load(
    kubeconfig: str | None = None,
    context: str | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    home: Path | None = None,
    service_account: Path = SERVICE_ACCOUNT,
    fetch: Fetch | None = None,
) -> Credentials:
    """The identity ``run`` and ``explain`` use (see the module's docstring for where it is
    looked for); :class:`CredentialsError` naming the file, entry and field that cannot work."""
    files = kubeconfig_files(kubeconfig, environ, home or Path.home())
    if files is None:
        return _in_cluster(environ, service_account)
    merged = _merge(files)
    shown = os.pathsep.join(str(f) for f in merged.files)
    name = context or merged.current
    if not name:
        raise CredentialsError(f"{shown}: no current-context, and no --context given")
    if name not in merged.contexts:
        raise CredentialsError(f"{shown}: no context named {name!r}")
    chosen = merged.contexts[name].value
    cluster_name, user_name = chosen.get("cluster"), chosen.get("user")
    if cluster_name not in merged.clusters:
        raise CredentialsError(f"{shown}: context {name!r} names no known cluster")
    cluster_entry = merged.clusters[str(cluster_name)]
    cluster, base = cluster_entry.value, cluster_entry.file.parent
    where = f"{cluster_entry.file}: clusters[{cluster_name}].cluster"
    server = str(cluster.get("server") or "")
    parts = urlsplit(server)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise CredentialsError(f"{where}.server: {server!r} is not an https:// URL")
    ca = _file_or_data(cluster, "certificate-authority", base, where, "certificate authority")
    proxy = cluster.get("proxy-url") or proxy_for(server, environ)
    target = Target(
        server=server.rstrip("/"),
        ca=ca,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        server_name=cluster.get("tls-server-name") or None,
        proxy=str(proxy) if proxy else None,
        namespace=str(chosen.get("namespace") or "default"),
        source=f"{shown} (context {name})",
    )
    if user_name is None or user_name == "":
        return Credentials(target, None)
    if user_name not in merged.users:
        raise CredentialsError(f"{shown}: context {name!r} names no known user {user_name!r}")
    return _user(target, merged.users[str(user_name)], str(user_name), cluster, fetch)


def _user(
    target: Target,
    entry: _Entry,
    name: str,
    cluster: Mapping[str, Any],
    fetch: Fetch | None,
) -> Credentials:
    user, base = entry.value, entry.file.parent
    where = f"{entry.file}: users[{name}].user"
    for unsupported in ("as", "as-uid", "as-groups", "as-user-extra"):
        if user.get(unsupported):
            raise CredentialsError(
                f"{where}.{unsupported}: impersonation is not supported; give the operator "
                "an identity of its own"
            )
    methods = [m for m, keys in _METHODS.items() if any(user.get(k) for k in keys)]
    if len(methods) > 1:
        raise CredentialsError(
            f"{where}: more than one authentication method ({', '.join(methods)}); only one is "
            "allowed"
        )
    certificate = _client_certificate(user, base, where)
    files = None
    if isinstance(certificate, tuple) and isinstance(certificate[0], Path):
        files, certificate = (certificate[0], certificate[1]), None
    authenticator: Authenticator | None = None
    if user.get("token"):
        authenticator = StaticToken(_bearer(str(user["token"])))
    elif user.get("tokenFile"):
        authenticator = TokenFile(_resolve(str(user["tokenFile"]), base))
    elif user.get("username") or user.get("password"):
        pair = f"{user.get('username', '')}:{user.get('password', '')}".encode()
        authenticator = StaticToken("Basic " + base64.b64encode(pair).decode())
    elif user.get("exec"):
        authenticator = _exec_plugin(user["exec"], f"{where}.exec", base, target, cluster)
    elif user.get("auth-provider"):
        authenticator = _auth_provider(user["auth-provider"], entry, name, fetch)
    return Credentials(
        target,
        authenticator,
        certificate if isinstance(certificate, tuple) else None,
        files,
    )


_METHODS = {
    "token": ("token", "tokenFile"),
    "basicAuth": ("username", "password"),
    "exec": ("exec",),
    "auth-provider": ("auth-provider",),
}


def _client_certificate(
    user: Mapping[str, Any], base: Path, where: str
) -> tuple[bytes, bytes] | tuple[Path, Path] | None:
    """The client certificate and key as data, or as the files to watch, or None."""
    has_cert = user.get("client-certificate") or user.get("client-certificate-data")
    has_key = user.get("client-key") or user.get("client-key-data")
    if not has_cert and not has_key:
        return None
    if not (has_cert and has_key):
        raise CredentialsError(f"{where}: client-certificate and client-key come together")
    if user.get("client-certificate-data") or user.get("client-key-data"):
        cert = _file_or_data(user, "client-certificate", base, where, "client certificate")
        key = _file_or_data(user, "client-key", base, where, "client key")
        assert cert is not None and key is not None
        return cert, key
    cert_path = _resolve(str(user["client-certificate"]), base)
    key_path = _resolve(str(user["client-key"]), base)
    for path, what in ((cert_path, "client certificate"), (key_path, "client key")):
        _read(path, what)
    return cert_path, key_path


def _exec_plugin(
    config: Any, where: str, base: Path, target: Target, cluster: Mapping[str, Any]
) -> ExecPlugin:
    if not isinstance(config, dict) or not config.get("command"):
        raise CredentialsError(f"{where}.command: required")
    version = config.get("apiVersion")
    if version not in EXEC_VERSIONS:
        raise CredentialsError(
            f"{where}.apiVersion: {version!r} is not one of {', '.join(EXEC_VERSIONS)}"
        )
    mode = config.get("interactiveMode") or ("IfAvailable" if version.endswith("v1beta1") else "")
    if mode not in ("Never", "IfAvailable", "Always"):
        raise CredentialsError(
            f"{where}.interactiveMode: {mode!r} is not Never, IfAvailable or Always"
        )
    if mode == "Always":
        raise CredentialsError(
            f"{where}.interactiveMode: Always needs a terminal, which the operator does not have"
        )
    env: dict[str, str] = {}
    for index, variable in enumerate(config.get("env") or []):
        if not isinstance(variable, dict) or not variable.get("name"):
            raise CredentialsError(f"{where}.env[{index}].name: required")
        env[str(variable["name"])] = str(variable.get("value") or "")
    command = str(config["command"])
    # client-go resolves a command with a path separator against the kubeconfig's folder.
    if os.sep in command and not Path(command).is_absolute():
        command = str(base / command)
    provided = None
    if config.get("provideClusterInfo"):
        provided = {
            "server": target.server,
            "tls-server-name": target.server_name or "",
            "insecure-skip-tls-verify": target.insecure,
            "certificate-authority-data": base64.b64encode(target.ca).decode() if target.ca else "",
            "proxy-url": target.proxy or "",
        }
        for extension in cluster.get("extensions") or []:
            if (
                isinstance(extension, dict)
                and extension.get("name") == "client.authentication.k8s.io/exec"
            ):
                provided["config"] = extension.get("extension")
    return ExecPlugin(
        command,
        [str(a) for a in config.get("args") or []],
        env,
        version,
        where,
        cwd=base,
        install_hint=str(config.get("installHint") or ""),
        cluster=provided,
    )


def _auth_provider(
    provider: Any,
    entry: _Entry,
    name: str,
    fetch: Fetch | None,
) -> Oidc:
    where = f"{entry.file}: users[{name}].user.auth-provider"
    kind = provider.get("name") if isinstance(provider, dict) else None
    if kind in REMOVED_PROVIDERS:
        raise CredentialsError(
            f"{where}: the {kind} auth provider was removed from Kubernetes clients in 1.26; "
            f"use the {REMOVED_PROVIDERS[kind]} exec plugin"
        )
    if kind != "oidc":
        raise CredentialsError(f"{where}.name: {kind!r} is not a supported auth provider (oidc)")
    config = provider.get("config") or {}
    if not isinstance(config, dict):
        raise CredentialsError(f"{where}.config: not a mapping")
    return Oidc(
        {str(k): str(v) for k, v in config.items()},
        where,
        persist=lambda updated: _persist_provider(entry.file, name, updated),
        fetch=fetch or _fetch,
    )


def _persist_provider(file: Path, name: str, config: Mapping[str, str]) -> None:
    """Write an auth provider's config back into the user ``name`` of ``file``, as kubectl does,
    atomically (a new file renamed over the old, with its mode)."""
    document = yaml.safe_load(file.read_text(encoding="utf-8"))
    for user in document.get("users") or []:
        if user.get("name") == name:
            user["user"]["auth-provider"]["config"] = dict(config)
    mode = file.stat().st_mode & 0o777
    fd, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yaml.safe_dump(document, out, sort_keys=False)
        os.chmod(temporary, mode)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


async def _fetch(
    url: str, ca: bytes | None, headers: Mapping[str, str], body: bytes | None
) -> tuple[int, bytes]:
    """One request to an OIDC issuer (GET, or POST with ``body``), over the same transport as
    the API's, through the proxy the environment names for it."""
    parts = urlsplit(url)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca is not None:
        context.load_verify_locations(cadata=ca.decode("ascii", "replace"))
    else:
        context.load_default_certs()
    pool = Pool(f"{parts.scheme}://{parts.netloc}", context, 1, proxy=proxy_for(url, os.environ))
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        async with (
            asyncio.timeout(30),
            pool.request("POST" if body is not None else "GET", target, headers, body) as answer,
        ):
            return answer.status, await answer.read()
    except (HttpError, OSError, TimeoutError) as error:
        raise CredentialsError(f"cannot reach {url}: {error or type(error).__name__}") from None
    finally:
        pool.close()


def _in_cluster(environ: Mapping[str, str], account: Path) -> Credentials:
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token = account / "token"
    if not host or not port or not token.is_file():
        raise CredentialsError(
            "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a cluster "
            "($KUBERNETES_SERVICE_HOST and the service account's token are missing)"
        )
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    try:
        namespace = (account / "namespace").read_text().strip() or "default"
    except OSError:
        namespace = "default"
    target = Target(
        server=server,
        ca=_read(account / "ca.crt", "service account CA"),
        proxy=proxy_for(server, environ),
        namespace=namespace,
        source=f"the service account of {account}",
    )
    return Credentials(target, TokenFile(token))
