"""The admission webhook's TLS: a serving certificate that every replica shares, and the CA
bundle the API server trusts it by.

The API server calls the webhook through a Service, which may send a call to any replica, so all
replicas must serve one certificate, and the ValidatingWebhookConfiguration's ``caBundle`` must
hold its CA. The first replica to start makes both (a CA, and a certificate it signs for the
Service's names and the address the webhook listens on) and stores them in a Secret of the
operator's namespace; the others read that Secret (a replica that loses the race to create it
reads the winner's). A certificate close to its end (:data:`RENEW_BEFORE`) or missing a name it
now needs is made again with the same CA, so the bundle stays valid through a rotation. Each
replica then writes the CA into the webhook configuration's ``caBundle`` where it is not there
yet. No cert-manager is needed; where one is used, it can own the Secret and the bundle instead
(the operator only makes what is missing or due).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from policy_scheduler.kube.client import JSON_PATCH, ApiError, Kube, path

logger = logging.getLogger(__name__)

CA_LIFETIME = datetime.timedelta(days=3650)
LIFETIME = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=90)
"""A serving certificate with less left than this is made again at start-up."""
CA_KEY = "ca.crt"
CERT_KEY = "tls.crt"
KEY_KEY = "tls.key"
CA_PRIVATE_KEY = "ca.key"
NOT_FOUND = 404
CONFLICT = 409


@dataclass(frozen=True)
class ServingCertificate:
    """A certificate (PEM), its key and the CA that signed it."""

    cert: bytes
    key: bytes
    ca: bytes


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _alternative_names(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def make_ca(common_name: str) -> tuple[bytes, bytes]:
    """A self-signed CA certificate and its key (PEM)."""
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def sign(ca_cert: bytes, ca_key: bytes, hosts: Sequence[str]) -> tuple[bytes, bytes]:
    """A serving certificate for ``hosts`` (DNS names or IP addresses) signed by the CA, and its
    key (PEM)."""
    issuer = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    assert isinstance(signer, ec.EllipticCurvePrivateKey)
    key = _key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.SubjectAlternativeName(_alternative_names(hosts)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(signer, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def due(cert: bytes, hosts: Sequence[str]) -> str | None:
    """Why the serving certificate must be made again (it ends soon, or lacks a name of
    ``hosts``), or None."""
    parsed = x509.load_pem_x509_certificate(cert)
    if parsed.not_valid_after_utc - _now() < RENEW_BEFORE:
        return f"it ends on {parsed.not_valid_after_utc:%Y-%m-%d}"
    try:
        names = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "it names no host"
    missing = [n for n in _alternative_names(hosts) if n not in names]
    if missing:
        return f"it does not name {', '.join(str(n.value) for n in missing)}"
    return None


def _secret_path(namespace: str, *name: str) -> str:
    return path("api", "v1", "namespaces", namespace, "secrets", *name)


def _decoded(secret: dict[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def _data(values: dict[str, bytes]) -> dict[str, str]:
    return {k: base64.b64encode(v).decode() for k, v in values.items()}


async def serving_certificate(
    kube: Kube, namespace: str, secret: str, hosts: Sequence[str]
) -> ServingCertificate:
    """The webhook's certificate for ``hosts`` from the Secret ``namespace/secret``, made (and
    stored) when the Secret is missing or its certificate is due."""
    while True:
        try:
            found = await kube.request("GET", _secret_path(namespace, secret))
        except ApiError as error:
            if error.status != NOT_FOUND:
                raise
            found = None
        if found is None:
            ca_cert, ca_key = make_ca(f"policy-scheduler webhook CA ({namespace})")
            cert, key = sign(ca_cert, ca_key, hosts)
            values = {CA_KEY: ca_cert, CA_PRIVATE_KEY: ca_key, CERT_KEY: cert, KEY_KEY: key}
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": namespace},
                "type": "kubernetes.io/tls",
                "data": _data(values),
            }
            try:
                await kube.request("POST", _secret_path(namespace), body, fenced=False)
            except ApiError as error:
                if error.status == CONFLICT:
                    continue  # another replica made it first: use theirs
                raise
            logger.info("made the webhook's CA and certificate in Secret %s/%s", namespace, secret)
            return ServingCertificate(cert, key, ca_cert)
        values = _decoded(found)
        reason = due(values[CERT_KEY], hosts) if CERT_KEY in values else "it is missing"
        if reason is None:
            return ServingCertificate(values[CERT_KEY], values[KEY_KEY], values[CA_KEY])
        cert, key = sign(values[CA_KEY], values[CA_PRIVATE_KEY], hosts)
        found["data"] = _data({**values, CERT_KEY: cert, KEY_KEY: key})
        try:
            # The read's resourceVersion makes this a compare-and-swap among the replicas.
            await kube.request("PUT", _secret_path(namespace, secret), found, fenced=False)
        except ApiError as error:
            if error.status == CONFLICT:
                continue
            raise
        logger.info("made the webhook's certificate again (%s)", reason)
        return ServingCertificate(cert, key, values[CA_KEY])


async def trust(kube: Kube, configuration: str, ca: bytes) -> None:
    """Make every webhook of the ValidatingWebhookConfiguration ``configuration`` trust ``ca``
    (its ``caBundle``), where it does not yet."""
    url_path = path(
        "apis",
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        configuration,
    )
    found = await kube.request("GET", url_path)
    bundle = base64.b64encode(ca).decode()
    patch: list[dict[str, Any]] = [
        {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle}
        for index, webhook in enumerate(found.get("webhooks") or [])
        if (webhook.get("clientConfig") or {}).get("caBundle") != bundle
    ]
    if patch:
        version = (found.get("metadata") or {}).get("resourceVersion")
        test = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}]
        await kube.request("PATCH", url_path, test + patch, JSON_PATCH, fenced=False)
        logger.info("ValidatingWebhookConfiguration %s trusts the webhook's CA now", configuration)
