"""The operator's identity (kube/credentials.py): where kubectl would find it, what each kind of
kubeconfig user becomes, and how each stays current: token files read again, exec plugins run
again before their credential expires or once it is refused, OIDC tokens refreshed and written
back, rotated client certificates picked up. Real files and real subprocesses; the OIDC issuer
is a function standing in for its two HTTP answers (tests/e2e/test_credentials.py runs a real
one against kube-apiserver)."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import stat
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from policy_scheduler.kube import certificates, credentials
from policy_scheduler.kube.credentials import Credentials, CredentialsError, load

SERVER = "https://127.0.0.1:6443"


def write_kubeconfig(
    path: Path,
    user: Mapping[str, Any] | None,
    *,
    cluster: Mapping[str, Any] | None = None,
    context: str = "local",
    namespace: str | None = None,
) -> Path:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": SERVER, **(cluster or {})}}],
        "contexts": [
            {
                "name": context,
                "context": {
                    "cluster": "local",
                    **({"user": "me"} if user is not None else {}),
                    **({"namespace": namespace} if namespace else {}),
                },
            }
        ],
        "current-context": context,
        "users": [{"name": "me", "user": dict(user)}] if user is not None else [],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def authorization(creds: Credentials) -> str | None:
    return asyncio.run(creds.authorization())


# --- where the kubeconfig is found, as kubectl finds it -------------------------------------


@pytest.mark.parametrize(
    ("given", "env", "home_config", "expected"),
    [
        pytest.param("given", "a:b", True, ["given"], id="--kubeconfig wins"),
        pytest.param(
            None, "a:missing:b", True, ["a", "b"], id="$KUBECONFIG, missing files skipped"
        ),
        pytest.param(None, "", True, ["home"], id="~/.kube/config"),
        pytest.param(None, "", False, None, id="nothing: the pod's service account"),
    ],
)
def test_the_kubeconfig_files_are_found_as_kubectl_finds_them(
    tmp_path: Path, given: str | None, env: str, home_config: bool, expected: list[str] | None
) -> None:
    for name in ("given", "a", "b"):
        (tmp_path / name).write_text("{}")
    home = tmp_path / "user"
    if home_config:
        (home / ".kube").mkdir(parents=True)
        (home / ".kube" / "config").write_text("{}")
    environ = {"KUBECONFIG": ":".join(str(tmp_path / p) for p in env.split(":"))} if env else {}
    found = credentials.kubeconfig_files(str(tmp_path / given) if given else None, environ, home)
    names = (
        None
        if found is None
        else ["home" if p == home / ".kube" / "config" else p.name for p in found]
    )
    assert names == expected


def test_merged_files_take_each_name_and_the_current_context_from_the_first(
    tmp_path: Path,
) -> None:
    first = write_kubeconfig(tmp_path / "first", {"token": "first"})
    second = tmp_path / "second"
    document = yaml.safe_load(write_kubeconfig(second, {"token": "second"}).read_text())
    document["contexts"].append({"name": "other", "context": {"cluster": "local", "user": "me"}})
    document["current-context"] = "other"
    second.write_text(yaml.safe_dump(document))
    environ = {"KUBECONFIG": f"{first}:{second}"}
    creds = load(environ=environ, home=tmp_path)
    assert authorization(creds) == "Bearer first"
    assert load(context="other", environ=environ, home=tmp_path).target.source.endswith(
        "(context other)"
    )


# --- what cannot work is said at load, naming where ------------------------------------------

BAD = {
    "an unknown context": ({"token": "t"}, {}, "nope", "no context named 'nope'"),
    "a server that is no URL": ({"token": "t"}, {"server": "localhost"}, None, ".server: "),
    "two ways to authenticate": (
        {"token": "t", "username": "u", "password": "p"},
        {},
        None,
        "more than one authentication method (token, basicAuth)",
    ),
    "impersonation": ({"token": "t", "as": "admin"}, {}, None, ".as: impersonation"),
    "the removed gcp provider": (
        {"auth-provider": {"name": "gcp"}},
        {},
        None,
        "use the gke-gcloud-auth-plugin exec plugin",
    ),
    "an exec API that was removed": (
        {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1alpha1"}},
        {},
        None,
        "exec.apiVersion: 'client.authentication.k8s.io/v1alpha1' is not one of",
    ),
    "an exec plugin that needs a terminal": (
        {
            "exec": {
                "command": "x",
                "apiVersion": "client.authentication.k8s.io/v1",
                "interactiveMode": "Always",
            }
        },
        {},
        None,
        "Always needs a terminal",
    ),
    "a v1 exec plugin without interactiveMode": (
        {"exec": {"command": "x", "apiVersion": "client.authentication.k8s.io/v1"}},
        {},
        None,
        "exec.interactiveMode: '' is not Never, IfAvailable or Always",
    ),
    "a client certificate without its key": (
        {"client-certificate-data": "eA=="},
        {},
        None,
        "client-certificate and client-key come together",
    ),
    "a CA that is not base64": (
        {"token": "t"},
        {"certificate-authority-data": "%%%"},
        None,
        "certificate-authority-data: not base64",
    ),
    "a token file that does not exist": (
        {"tokenFile": "/nonexistent/token"},
        {},
        None,
        "cannot read token file /nonexistent/token",
    ),
}


@pytest.mark.parametrize(("user", "cluster", "context", "said"), BAD.values(), ids=BAD.keys())
def test_what_cannot_work_is_said_naming_the_file_and_the_field(
    tmp_path: Path,
    user: Mapping[str, Any],
    cluster: Mapping[str, Any],
    context: str | None,
    said: str,
) -> None:
    path = write_kubeconfig(tmp_path / "config", user, cluster=cluster)
    with pytest.raises(CredentialsError) as raised:
        authorization(load(str(path), context))
    assert said in str(raised.value)
    assert str(path) in str(raised.value) or "token file" in said


# --- each kind of user, and how it stays current -------------------------------------------


def test_a_token_file_is_read_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credentials, "FILE_CHECK", 0.0)
    token = tmp_path / "token"
    token.write_text("one\n")
    creds = load(str(write_kubeconfig(tmp_path / "config", {"tokenFile": "token"})))

    async def scenario() -> list[str | None]:
        seen = [await creds.authorization()]
        token.write_text("two")
        seen.append(await creds.authorization())
        return seen

    assert asyncio.run(scenario()) == ["Bearer one", "Bearer two"]


def test_basic_authentication(tmp_path: Path) -> None:
    creds = load(str(write_kubeconfig(tmp_path / "c", {"username": "u", "password": "p"})))
    assert authorization(creds) == "Basic " + base64.b64encode(b"u:p").decode()


def test_a_user_less_context_sends_no_authorization(tmp_path: Path) -> None:
    assert authorization(load(str(write_kubeconfig(tmp_path / "c", None)))) is None


PLUGIN = """\
import json, os, sys
from datetime import datetime, timedelta, timezone
runs = os.environ["RUNS"]
with open(runs, "a") as out:
    out.write(os.environ["KUBERNETES_EXEC_INFO"] + "\\n")
count = sum(1 for _ in open(runs))
mode = os.environ.get("MODE", "token")
if mode == "fail":
    print("aws: the SSO session has expired", file=sys.stderr)
    sys.exit(3)
status = {}
if mode == "token":
    status["token"] = f"token-{count}"
else:
    status["clientCertificateData"] = open(os.environ["CERT"]).read()
    status["clientKeyData"] = open(os.environ["KEY"]).read()
lifetime = float(os.environ.get("LIFETIME", "0"))
if lifetime:
    until = datetime.now(timezone.utc) + timedelta(seconds=lifetime)
    status["expirationTimestamp"] = until.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
print(json.dumps({"apiVersion": os.environ.get("VERSION", "client.authentication.k8s.io/v1"),
                  "kind": "ExecCredential", "status": status}))
"""


def exec_user(tmp_path: Path, **env: str) -> dict[str, Any]:
    plugin = tmp_path / "bin" / "get-token"
    plugin.parent.mkdir(exist_ok=True)
    plugin.write_text(f"#!{sys.executable}\n{PLUGIN}")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            # Relative, with a path separator: resolved against the kubeconfig's folder.
            "command": "bin/get-token",
            "interactiveMode": "Never",
            "provideClusterInfo": True,
            "env": [
                {"name": "RUNS", "value": str(tmp_path / "runs")},
                *({"name": k, "value": v} for k, v in env.items()),
            ],
            "installHint": "install get-token",
        }
    }


def runs(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "runs"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_an_exec_plugin_runs_once_until_its_credential_is_due_then_again(tmp_path: Path) -> None:
    config = write_kubeconfig(
        tmp_path / "config", exec_user(tmp_path, LIFETIME="1.5"), cluster={"tls-server-name": "k8s"}
    )
    creds = load(str(config))

    async def scenario() -> list[str | None]:
        seen = [await creds.authorization(), await creds.authorization()]
        # Due 0.3 s before its expiry (a fifth of its 1.5 s).
        await asyncio.sleep(1.3)
        seen.append(await creds.authorization())
        return seen

    assert asyncio.run(scenario()) == ["Bearer token-1", "Bearer token-1", "Bearer token-2"]
    info = runs(tmp_path)[0]
    assert info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == SERVER
    assert info["spec"]["cluster"]["tls-server-name"] == "k8s"
    assert creds.expires is not None


def test_a_refused_credential_runs_the_plugin_again_once(tmp_path: Path) -> None:
    creds = load(str(write_kubeconfig(tmp_path / "config", exec_user(tmp_path))))

    async def scenario() -> list[str | None]:
        first = await creds.authorization()
        # Several requests refused with the same credential: one new run, not one each.
        creds.refused(first)
        creds.refused(first)
        second = await creds.authorization()
        creds.refused(first)  # a late refusal of the old one changes nothing
        return [first, second, await creds.authorization()]

    assert asyncio.run(scenario()) == ["Bearer token-1", "Bearer token-2", "Bearer token-2"]
    assert len(runs(tmp_path)) == 2


@pytest.mark.parametrize(
    ("env", "said"),
    [
        pytest.param(
            {"MODE": "fail"}, "exited with 3: aws: the SSO session has expired", id="fails"
        ),
        pytest.param(
            {"VERSION": "client.authentication.k8s.io/v1beta1"},
            "apiVersion 'client.authentication.k8s.io/v1beta1' is not the kubeconfig's",
            id="answers in another API version",
        ),
    ],
)
def test_a_plugin_that_fails_is_said_with_its_words(
    tmp_path: Path, env: dict[str, str], said: str
) -> None:
    creds = load(str(write_kubeconfig(tmp_path / "config", exec_user(tmp_path, **env))))
    with pytest.raises(CredentialsError, match=r"users\[me\]\.user\.exec") as raised:
        authorization(creds)
    assert said in str(raised.value)


def test_a_plugin_that_is_not_installed_gets_its_install_hint(tmp_path: Path) -> None:
    user = exec_user(tmp_path)
    user["exec"]["command"] = "no-such-plugin-here"
    creds = load(str(write_kubeconfig(tmp_path / "config", user)))
    with pytest.raises(
        CredentialsError, match=r"cannot run no-such-plugin-here.*install get-token"
    ):
        authorization(creds)


def make_certificate(directory: Path, name: str) -> tuple[Path, Path]:
    ca_cert, ca_key = certificates.make_ca(f"{name} CA")
    cert, key = certificates.sign(ca_cert, ca_key, [name])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(cert)
    (directory / "tls.key").write_bytes(key)
    return directory / "tls.crt", directory / "tls.key"


def test_an_exec_plugin_may_give_a_client_certificate(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path / "pki", "operator")
    user = exec_user(tmp_path, MODE="certificate", CERT=str(cert), KEY=str(key))
    creds = load(str(write_kubeconfig(tmp_path / "config", user)))
    before = creds.ssl_context()
    assert authorization(creds) is None  # no token: the certificate authenticates
    assert creds.ssl_context() is not before


def test_rotated_client_certificate_files_make_a_new_tls_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credentials, "FILE_CHECK", 0.0)
    make_certificate(tmp_path / "pki", "first")
    user = {"client-certificate": "pki/tls.crt", "client-key": "pki/tls.key"}
    creds = load(str(write_kubeconfig(tmp_path / "config", user)))
    first = creds.ssl_context()
    assert creds.ssl_context() is first
    time.sleep(0.01)  # a new modification time
    make_certificate(tmp_path / "pki", "second")
    assert creds.ssl_context() is not first


def test_tls_server_name_is_the_name_every_connection_checks(tmp_path: Path) -> None:
    config = write_kubeconfig(
        tmp_path / "config", {"token": "t"}, cluster={"tls-server-name": "kubernetes.internal"}
    )
    context = load(str(config)).ssl_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    wrapped = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    assert wrapped.server_hostname == "kubernetes.internal"


def jwt(claims: Mapping[str, Any]) -> str:
    def part(value: Mapping[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.c2ln"


class Issuer:
    """An OIDC issuer's discovery and token endpoint, as a ``fetch`` function."""

    def __init__(self, lifetime: float = 3600, status: int = 200) -> None:
        self.lifetime = lifetime
        self.status = status
        self.refreshes: list[tuple[Mapping[str, str], bytes]] = []

    async def __call__(
        self, url: str, ca: bytes | None, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, bytes]:
        if url.endswith("/.well-known/openid-configuration"):
            return 200, json.dumps({"token_endpoint": "https://idp.test/token"}).encode()
        assert url == "https://idp.test/token"
        self.refreshes.append((headers, body or b""))
        if self.status != 200:
            return self.status, b'{"error": "invalid_grant", "error_description": "revoked"}'
        now = datetime.now(UTC).timestamp()
        token = jwt({"exp": now + self.lifetime, "iat": now, "n": len(self.refreshes)})
        answer = {"id_token": token, "refresh_token": f"refresh-{len(self.refreshes)}"}
        return 200, json.dumps(answer).encode()


def oidc_user(id_token: str) -> dict[str, Any]:
    return {
        "auth-provider": {
            "name": "oidc",
            "config": {
                "idp-issuer-url": "https://idp.test",
                "client-id": "policy-scheduler",
                "client-secret": "s3cret",
                "id-token": id_token,
                "refresh-token": "refresh-0",
            },
        }
    }


def test_an_expired_oidc_token_is_refreshed_and_written_back(tmp_path: Path) -> None:
    expired = jwt({"exp": (datetime.now(UTC) - timedelta(minutes=1)).timestamp()})
    config = write_kubeconfig(tmp_path / "config", oidc_user(expired))
    issuer = Issuer()
    creds = load(str(config), fetch=issuer)
    header = authorization(creds)
    assert header is not None and header != f"Bearer {expired}"
    headers, body = issuer.refreshes[0]
    assert (
        headers["Authorization"] == "Basic " + base64.b64encode(b"policy-scheduler:s3cret").decode()
    )
    assert body == b"grant_type=refresh_token&refresh_token=refresh-0"
    saved = yaml.safe_load(config.read_text())["users"][0]["user"]["auth-provider"]["config"]
    assert f"Bearer {saved['id-token']}" == header
    assert saved["refresh-token"] == "refresh-1"


def test_a_valid_oidc_token_is_used_as_it_is(tmp_path: Path) -> None:
    valid = jwt({"exp": (datetime.now(UTC) + timedelta(hours=1)).timestamp()})
    issuer = Issuer()
    creds = load(str(write_kubeconfig(tmp_path / "config", oidc_user(valid))), fetch=issuer)
    assert authorization(creds) == f"Bearer {valid}"
    assert issuer.refreshes == []


def test_a_refused_refresh_is_said_with_the_issuers_words(tmp_path: Path) -> None:
    expired = jwt({"exp": 1})
    creds = load(
        str(write_kubeconfig(tmp_path / "config", oidc_user(expired))), fetch=Issuer(status=400)
    )
    with pytest.raises(
        CredentialsError, match=r"refreshing the id-token .* failed \(status 400: revoked\)"
    ):
        authorization(creds)


def test_in_a_pod_the_service_account_is_used_and_its_token_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credentials, "FILE_CHECK", 0.0)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    ca, _ = certificates.make_ca("cluster CA")
    (account / "ca.crt").write_bytes(ca)
    (account / "token").write_text("first")
    (account / "namespace").write_text("policy-scheduler")
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    creds = load(environ=environ, home=tmp_path, service_account=account)
    assert creds.target.server == "https://[fd00::1]:443"
    assert creds.target.namespace == "policy-scheduler"
    assert creds.target.ca == ca

    async def scenario() -> list[str | None]:
        seen = [await creds.authorization()]
        (account / "token").write_text("rotated")
        seen.append(await creds.authorization())
        return seen

    assert asyncio.run(scenario()) == ["Bearer first", "Bearer rotated"]


def test_outside_a_pod_without_a_kubeconfig_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=r"no kubeconfig .* and not in a cluster"):
        load(environ={}, home=tmp_path, service_account=tmp_path / "none")
