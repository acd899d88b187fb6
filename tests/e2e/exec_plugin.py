"""A client-go credential plugin, as a managed cluster's kubeconfig runs one (``aws eks
get-token``, ``kubelogin``): it asks the identity provider (``identity.py``) for a token and
prints an ExecCredential with the token's expiry. Standard library only, as a plugin is a program
of its own; each run is appended to ``$RUNS``."""

from __future__ import annotations

import base64
import json
import os
import ssl
import sys
import urllib.request
from datetime import UTC, datetime, timedelta


def main() -> int:
    info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
    secret = base64.b64encode(
        f"{os.environ['CLIENT_ID']}:{os.environ['CLIENT_SECRET']}".encode()
    ).decode()
    request = urllib.request.Request(
        f"{os.environ['ISSUER']}/token",
        data=b"grant_type=client_credentials",
        headers={"Authorization": f"Basic {secret}"},
    )
    context = ssl.create_default_context(cafile=os.environ["ISSUER_CA"])
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        token = json.load(answer)
    expires = datetime.now(UTC) + timedelta(seconds=token["expires_in"])
    with open(os.environ["RUNS"], "a") as runs:
        runs.write(f"{datetime.now(UTC).isoformat()} {info['spec'].get('interactive')}\n")
    credential = {
        "apiVersion": info["apiVersion"],
        "kind": "ExecCredential",
        "status": {
            "token": token["id_token"],
            "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
    json.dump(credential, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
