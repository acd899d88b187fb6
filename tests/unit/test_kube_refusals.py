"""What the API server refused, said at once (kube/refusals.py): the RBAC verb and resource of a
request, the first refusal of each kind logged as an error and every one counted."""

from __future__ import annotations

import logging

import pytest

from policy_scheduler.kube.refusals import Refusals, rbac_kind


@pytest.mark.parametrize(
    ("method", "url_path", "expected"),
    [
        pytest.param(
            "POST", "/api/v1/namespaces/ns/events", ("create", "events", "ns"), id="create"
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/ns/pods/web/binding",
            ("create", "pods/binding", "ns"),
            id="a subresource",
        ),
        pytest.param(
            "PATCH",
            "/apis/policy-scheduler.dev/v1alpha1/schedulingpolicies/zone/status",
            ("patch", "schedulingpolicies.policy-scheduler.dev/status", ""),
            id="a cluster-scoped custom resource's status",
        ),
        pytest.param("GET", "/api/v1/pods?limit=500", ("list", "pods", ""), id="list"),
        pytest.param(
            "GET",
            "/apis/policy/v1/poddisruptionbudgets?watch=1&resourceVersion=9",
            ("watch", "poddisruptionbudgets.policy", ""),
            id="watch",
        ),
        pytest.param(
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/ps/leases/ps",
            ("get", "leases.coordination.k8s.io", "ps"),
            id="get",
        ),
        pytest.param(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/ps/leases/ps",
            ("update", "leases.coordination.k8s.io", "ps"),
            id="update",
        ),
        pytest.param(
            "DELETE", "/api/v1/namespaces/ns/pods/victim", ("delete", "pods", "ns"), id="delete"
        ),
    ],
)
def test_a_request_is_named_as_rbac_names_it(
    method: str, url_path: str, expected: tuple[str, str, str]
) -> None:
    assert rbac_kind(method, url_path) == expected


def test_the_first_refusal_of_a_kind_is_an_error_the_next_ones_are_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counted: list[tuple[str, str, str]] = []
    refusals = Refusals("kubeconfig /k (context c)", lambda *kind: counted.append(kind))
    with caplog.at_level(logging.DEBUG, logger="policy_scheduler.kube.refusals"):
        for _ in range(3):
            refusals.refused("POST", "/api/v1/namespaces/a/events", 403, "events is forbidden")
        refusals.refused("PATCH", "/api/v1/namespaces/a/pods/p/status", 403, "forbidden")
        refusals.allowed("POST", "/api/v1/namespaces/b/events")
        refusals.refused("POST", "/api/v1/namespaces/a/events", 403, "events is forbidden")
        refusals.refused("GET", "/api/v1/nodes?limit=500", 401, "Unauthorized")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 4  # events, pods/status, events again once allowed between, the 401
    assert errors[0].startswith(
        "403 Forbidden: the API server does not let the operator create events in namespace a: "
        "events is forbidden"
    )
    assert "re-apply deploy/rbac.yaml" in errors[0]
    assert "kubectl auth can-i create events" in errors[0]
    assert errors[3].startswith(
        "401 Unauthorized: the API server does not accept the credentials of "
        "kubeconfig /k (context c)"
    )
    assert any(
        "allows the operator to create events again" in r.getMessage() for r in caplog.records
    )
    assert counted.count(("create", "events", "403")) == 4
    assert ("list", "nodes", "401") in counted


def test_no_credentials_is_said_once_per_reason(caplog: pytest.LogCaptureFixture) -> None:
    refusals = Refusals()
    with caplog.at_level(logging.ERROR, logger="policy_scheduler.kube.refusals"):
        refusals.no_credentials("exec plugin: exited with 1")
        refusals.no_credentials("exec plugin: exited with 1")
    assert len(caplog.records) == 1
