"""What the API server refused the operator, said at once: a lost permission is for a person to fix.

A 403 means the operator's RBAC lacks a rule (a ClusterRole older than the code, a rule taken
away; the client does not pass on the 403 admission gives new content in a namespace being
deleted); a 401 that its credentials are not accepted. Neither heals by retrying, though some
callers retry a while (a restarting API server answers 403 briefly, :mod:`~policy_scheduler.
kube.events`), so the first refusal of each kind of request (verb and resource, as RBAC names
them: ``create events``, ``patch pods/status``) is logged at once, with what to do, and every
refusal is counted for :mod:`~policy_scheduler.metrics` (``policy_scheduler_api_refusals_total``).
Repeats of a kind already told go to debug until a request of that kind succeeds again, which
is said too. A credential that could not be had at all (an exec plugin failing) is told the same
way, once per distinct reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import parse_qs, unquote, urlsplit

logger = logging.getLogger(__name__)

Sink = Callable[[str, str, str], None]
"""``sink(verb, resource, code)``: one refusal, counted (code: the status, or ``credentials``)."""

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def rbac_kind(method: str, url_path: str) -> tuple[str, str, str]:
    """The RBAC verb, resource (``pods/binding``, ``leases.coordination.k8s.io``) and namespace
    ("" when cluster-wide) of a request to ``url_path``."""
    parts = urlsplit(url_path)
    segments = [unquote(s) for s in parts.path.strip("/").split("/")]
    if segments[:1] == ["api"]:
        group, rest = "", segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 3:
        group, rest = segments[1], segments[3:]
    else:
        return method.lower(), parts.path, ""
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    if group:
        resource = f"{resource}.{group}"
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    if method == "GET":
        watch = parse_qs(parts.query).get("watch", [""])[0] in ("1", "true")
        verb = "get" if named else "watch" if watch else "list"
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return verb, resource, namespace


class Refusals:
    """The kinds of request the API server has refused and not allowed since."""

    def __init__(self, identity: str = "the operator", sink: Sink | None = None) -> None:
        self.identity = identity
        """Who was refused, for the log line: where the credentials came from."""
        self.sink = sink
        self.told = True
        """Whether refusals are logged: a command that says its error itself (explain) does not
        want them said twice."""
        self._refused: set[tuple[str, str]] = set()
        self._told_credentials: set[str] = set()

    def __bool__(self) -> bool:
        """Whether some kind of request stands refused (only then are successes looked at)."""
        return bool(self._refused)

    def refused(self, method: str, url_path: str, status: int, message: str) -> None:
        verb, resource, namespace = rbac_kind(method, url_path)
        if self.sink is not None:
            self.sink(verb, resource, str(status))
        kind = (verb, resource)
        if not self.told:
            return
        if kind in self._refused:
            logger.debug("refused again (%d): %s %s: %s", status, verb, resource, message)
            return
        self._refused.add(kind)
        where = f" in namespace {namespace}" if namespace else ""
        if status == 401:
            logger.error(
                "401 Unauthorized: the API server does not accept the credentials of %s "
                "(to %s %s%s): %s. Until it does, such requests fail; they are retried where a "
                "retry can help, and counted in policy_scheduler_api_refusals_total",
                self.identity,
                verb,
                resource,
                where,
                message,
            )
        else:
            logger.error(
                "403 Forbidden: the API server does not let the operator %s %s%s: %s. Its RBAC "
                "may be older than its code: re-apply deploy/rbac.yaml (kubectl auth can-i %s "
                "%s --as=USER tells). Such requests are retried where a retry can help (a "
                "restarting API server refuses briefly) and counted in "
                "policy_scheduler_api_refusals_total",
                verb,
                resource,
                where,
                message,
                verb,
                resource,
            )

    def allowed(self, method: str, url_path: str) -> None:
        """A request succeeded: if its kind stood refused, say that it is allowed again."""
        verb, resource, _ = rbac_kind(method, url_path)
        if (verb, resource) in self._refused:
            self._refused.discard((verb, resource))
            logger.info("the API server allows the operator to %s %s again", verb, resource)

    def no_credentials(self, reason: str) -> None:
        """No credential could be had for a request (an exec plugin or a refresh failed)."""
        if self.sink is not None:
            self.sink("", "", "credentials")
        if not self.told:
            return
        if reason in self._told_credentials:
            logger.debug("still no credentials: %s", reason)
            return
        self._told_credentials.add(reason)
        logger.error(
            "no credentials for %s: %s; requests fail until this is fixed (counted in "
            'policy_scheduler_api_refusals_total{code="credentials"})',
            self.identity,
            reason,
        )
