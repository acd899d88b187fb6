"""A small OpenID Connect issuer on 127.0.0.1, standing in for a managed cluster's identity
provider: kube-apiserver trusts the JWTs it signs (an AuthenticationConfiguration naming it),
and it hands out short-lived ones, to a credential plugin (``exec_plugin.py``, as ``aws eks
get-token`` or ``kubelogin`` does) or to a refresh-token grant (kubectl's ``oidc`` auth provider).

It serves the discovery document, its signing key (JWKS) and a token endpoint, over TLS with a
CA of its own, and counts what it issued.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from policy_scheduler.kube import certificates

AUDIENCE = "policy-scheduler-e2e"
CLIENT_ID = "policy-scheduler"
CLIENT_SECRET = "e2e-secret"
SUBJECT = "policy-scheduler"
USERNAME_PREFIX = "oidc:"
USERNAME = USERNAME_PREFIX + SUBJECT


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    """The issuer: start it, write its files, then ``token()`` or let clients call it."""

    def __init__(self, directory: Path, lifetime: float) -> None:
        self.directory = directory
        self.lifetime = lifetime
        """Seconds each token it issues is valid."""
        self.issued = 0
        self.refreshes = 0
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ca_cert, ca_key = certificates.make_ca("e2e identity provider CA")
        cert, key = certificates.sign(ca_cert, ca_key, ["127.0.0.1"])
        directory.mkdir(parents=True, exist_ok=True)
        self.ca_file = directory / "idp-ca.crt"
        self.ca_file.write_bytes(ca_cert)
        (directory / "idp.crt").write_bytes(cert)
        (directory / "idp.key").write_bytes(key)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(directory / "idp.crt", directory / "idp.key")
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def authentication_config(self) -> Path:
        """The AuthenticationConfiguration that makes kube-apiserver trust this issuer."""
        path = self.directory / "authentication.yaml"
        config = {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AuthenticationConfiguration",
            "jwt": [
                {
                    "issuer": {
                        "url": self.url,
                        "audiences": [AUDIENCE],
                        "certificateAuthority": self.ca_file.read_text(),
                    },
                    "claimMappings": {"username": {"claim": "sub", "prefix": USERNAME_PREFIX}},
                }
            ],
        }
        path.write_text(json.dumps(config))
        return path

    def token(self) -> str:
        """A new ID token, valid for :attr:`lifetime` seconds from now."""
        now = time.time()
        with self._lock:
            self.issued += 1
            serial = self.issued
        header = {"alg": "RS256", "typ": "JWT", "kid": "e2e"}
        claims = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": SUBJECT,
            "iat": int(now),
            "nbf": int(now) - 1,
            "exp": now + self.lifetime,
            "jti": str(serial),
        }
        signed = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signed}.{_b64(signature)}"

    def _jwks(self) -> dict[str, Any]:
        numbers = self._key.public_key().public_numbers()

        def encoded(value: int) -> str:
            return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))

        key = {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "e2e"}
        return {"keys": [{**key, "n": encoded(numbers.n), "e": encoded(numbers.e)}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the tests' output is the operator's log

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    self._json(
                        200,
                        {
                            "issuer": issuer.url,
                            "jwks_uri": f"{issuer.url}/keys",
                            "token_endpoint": f"{issuer.url}/token",
                            "id_token_signing_alg_values_supported": ["RS256"],
                            "response_types_supported": ["id_token"],
                            "subject_types_supported": ["public"],
                        },
                    )
                elif self.path == "/keys":
                    self._json(200, issuer._jwks())
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
                if (
                    self.path != "/token"
                    or self.headers.get("Authorization") != f"Basic {expected}"
                ):
                    self._json(401, {"error": "invalid_client"})
                    return
                grant = form.get("grant_type", [""])[0]
                if grant == "refresh_token":
                    with issuer._lock:
                        issuer.refreshes += 1
                elif grant != "client_credentials":
                    self._json(400, {"error": "unsupported_grant_type"})
                    return
                self._json(
                    200,
                    {
                        "id_token": issuer.token(),
                        "access_token": "unused",
                        "token_type": "Bearer",
                        "refresh_token": f"refresh-{issuer.refreshes}",
                        "expires_in": int(issuer.lifetime),
                    },
                )

        return Handler
