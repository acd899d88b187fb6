"""``explain`` on a pending pod a preemption was made for (issue 14): the node it is nominated
to and the preemption the policy's status records, its victims and why; a DryRun one as whom it
would have evicted."""

from __future__ import annotations

from typing import Any

from test_explain_unit import decision, explained, raw_pod

WHY = "node small: the fewest victims of the lowest priority"


def preempting(
    pod: str, *, dry_run: bool = False, time: str = "2026-01-01T00:00:01Z"
) -> dict[str, Any]:
    """A ``status.decisions`` entry of a pod no node fit, for which a preemption was made."""
    record = decision(pod, None, time)
    record["preemption"] = {
        "node": "small",
        "victims": ["ns/low-a", "ns/low-b"],
        "victimCount": 3,
        "pdbViolations": 1,
        "why": WHY,
    }
    if dry_run:
        record["dryRun"] = True
    return record


def huge(nominated: str = "") -> dict[str, Any]:
    raw = raw_pod("huge", "8")
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    return raw


def test_a_pending_pod_shows_its_nomination_and_the_recorded_preemption() -> None:
    status = {"decisions": [decision("ns/other", None), preempting("ns/huge")]}
    report = explained(huge("small"), status)
    data = report.to_dict()
    assert data["nominatedNodeName"] == "small"
    assert data["preemption"]["preemption"]["victims"] == ["ns/low-a", "ns/low-b"]
    assert report.lines()[-3:] == [
        "nominated to small by a preemption: it is placed there once the victims are gone, "
        "if it still fits",
        "recorded preemption at 2026-01-01T00:00:01Z: nominated it to small, evicting ns/low-a, "
        "ns/low-b, and 1 more (1 against a PodDisruptionBudget)",
        f"  why: {WHY}",
    ]


def test_a_dry_run_preemption_says_whom_it_would_have_evicted() -> None:
    report = explained(huge(), {"decisions": [preempting("ns/huge", dry_run=True)]})
    assert "nominatedNodeName" not in report.to_dict()
    assert report.lines()[-2] == (
        "recorded preemption at 2026-01-01T00:00:01Z: (DryRun) would have evicted ns/low-a, "
        "ns/low-b, and 1 more (1 against a PodDisruptionBudget) on small; nothing was evicted"
    )


def test_a_preemption_recorded_before_the_pod_was_created_is_another_pods() -> None:
    old = preempting("ns/huge", time="2025-12-31T23:59:59Z")
    data = explained(huge(), {"decisions": [old]}).to_dict()
    assert "preemption" not in data
