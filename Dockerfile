# policy-scheduler's image: `docker build -t policy-scheduler:latest .`
#
# Two stages: the build stage makes a wheel of this checkout and installs it, with dependencies at
# exactly the versions of constraints.txt, into the virtual environment /opt/venv; the final stage
# is the same base image with that environment copied in, owned by root and run by an
# unprivileged user, so the process cannot change its own code. The base must be a Debian-based
# Python image (useradd below); the build and final stages must use the same one, because the
# virtual environment links to the base's interpreter at /usr/local/bin.
# tests/unit/test_dockerfile.py lints this file and replays the build stage's install steps.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
# No pip cache in a layer that is thrown away anyway; no version check against the network.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
# Dependencies first, in a layer of their own that is rebuilt only when the pins change.
COPY constraints.txt ./
RUN /opt/venv/bin/pip install --no-cache-dir --requirement constraints.txt
# Then the project: what the wheel is built from (pyproject.toml names README.md as its readme,
# and carries crds/schedulingpolicy.yaml as a data file: the operator validates policies with it).
COPY pyproject.toml README.md ./
COPY crds/schedulingpolicy.yaml crds/
COPY operator/ operator/
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && /opt/venv/bin/pip install --no-cache-dir --constraint constraints.txt /wheels/*.whl

FROM ${PYTHON_IMAGE}
# 65532, as distroless' "nonroot": a passwd entry is needed because Kopf asks for the user's name
# (getpass.getuser) at start-up, which fails for a uid the system does not know.
RUN groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot
# Owned by root, not writable by the user below. Bytecode was compiled at install time, so
# nothing needs writing at run time (the Deployment also mounts the root filesystem read-only).
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
# Kopf's liveness probe (--liveness); Prometheus metrics (--metrics) and readiness (--readiness)
# on a port of their own; the validating admission webhook (--admission).
EXPOSE 8080 8081 9443
ENTRYPOINT ["policy-scheduler", "run"]
# Without a kubeconfig it uses the pod's service account; arguments given to the container
# (deploy/deployment.yaml's args) replace these.
CMD ["--liveness=http://0.0.0.0:8080/healthz", "--readiness=http://0.0.0.0:8081/readyz", \
     "--metrics=http://0.0.0.0:8081/metrics"]
