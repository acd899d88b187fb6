"""policy-scheduler: a Kubernetes scheduler whose policy is a SchedulingPolicy custom resource.

The decision path (``model``, ``plugins``, ``pipeline``, ``cache``, ``queue``) is plain Python over
plain data; only ``kube``, ``handlers`` and ``cli`` talk to an API server.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("policy-scheduler")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
