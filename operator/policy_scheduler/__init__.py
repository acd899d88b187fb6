"""policy-scheduler: a Kubernetes scheduler whose policy is a SchedulingPolicy custom resource.

The decision path (``model``, ``plugins``, ``pipeline``, ``policy``) and the scheduling loop
(``scheduling``) are plain Python over plain data; only ``kube``, ``handlers`` and ``explain``
talk to an API server (docs/architecture.md).
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # ``__version__`` is read from the installed metadata only when asked for: importing
    # importlib.metadata costs a tenth of a second at every start of the offline commands.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("policy-scheduler")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+unknown"
