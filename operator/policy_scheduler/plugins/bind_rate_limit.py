"""BindRateLimit: a Permit plugin that lets a policy's pods go to binding no faster than a rate
(no kube-scheduler counterpart; kube-scheduler limits only its own API requests, with its client's
QPS and Burst).

A rollout of a thousand pods otherwise starts them all at once: every image pull, volume attach,
IP allocation and admission webhook call of the cluster lands in the same seconds. A policy that
lists this plugin under ``spec.plugins.permit`` starts them at ``qps`` a second on average, after a
first ``burst`` at once: a token bucket of ``burst`` tokens, refilled at ``qps`` a second, one
token per pod permitted. A pod that finds the bucket empty is refused; it is tried again after its
back-off, as every pod a Permit plugin refuses is. A pod that a later step fails (another Permit,
a PreBind, the bind itself) has still spent its token: the bucket limits attempts to bind.

Args: ``{qps: number > 0, burst: integer >= 1}``, by default kube-scheduler's own client's (50 and
100). The bucket starts full and belongs to the compiled policy: a change of the policy's spec
starts a new one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from policy_scheduler.framework.args import Args, ArgsError, FieldError, unknown_fields
from policy_scheduler.framework.interface import Permit
from policy_scheduler.model.objects import PodView

NAME = "BindRateLimit"

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100


class BindRateLimit(Permit[None]):
    """Permits pods while the token bucket holds a token, and takes one for each."""

    name = NAME

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._qps = qps
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._filled_at = clock()

    def permit(self, state: None, pod: PodView, node: str) -> str | None:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._filled_at) * self._qps)
        self._filled_at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return None
        return (
            f"{NAME}: the policy's pods go to binding at most {self._qps:g} a second, in bursts "
            f"of {self._burst}; tried again later"
        )


def new_plugin(args: Args, path: str) -> BindRateLimit:
    errors = unknown_fields(args, ("qps", "burst"), path)
    qps = args.get("qps", DEFAULT_QPS)
    if isinstance(qps, bool) or not isinstance(qps, int | float) or not qps > 0:
        errors.append(FieldError(f"{path}.qps", "must be a number > 0"))
    burst = args.get("burst", DEFAULT_BURST)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
        errors.append(FieldError(f"{path}.burst", "must be an integer >= 1"))
    if errors:
        raise ArgsError(errors)
    return BindRateLimit(float(qps), burst)
