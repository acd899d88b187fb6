"""Prometheus expositions (an operator's, kube-scheduler's, kube-apiserver's /metrics) fetched and
read, with prometheus_client's parser."""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping

import requests
from prometheus_client.parser import text_string_to_metric_families
from urllib3.exceptions import InsecureRequestWarning

Samples = Mapping[tuple[str, frozenset[tuple[str, str]]], float]
"""A scrape: (metric, labels) -> value."""

DISPATCHED = "apiserver_flowcontrol_dispatched_requests_total"
REQUESTS = "apiserver_request_total"
STARTED = "process_start_time_seconds"
APISERVER = (DISPATCHED, REQUESTS, STARTED)
"""What is read of kube-apiserver's page, which is megabytes: the rest is not parsed."""


def _name(line: str) -> str:
    """The metric a line of an exposition is about (a sample's, or a HELP or TYPE line's)."""
    if line.startswith("#"):
        words = line.split(maxsplit=3)
        return words[2] if len(words) > 2 else ""
    return line.split("{", 1)[0].split(" ", 1)[0]


def samples_of(text: str, *names: str) -> Samples:
    """Every sample of a Prometheus text exposition; with ``names``, of those metrics only (as
    the page names them: a counter's with its ``_total``)."""
    if names:
        wanted = set(names)
        text = "".join(f"{line}\n" for line in text.splitlines() if _name(line) in wanted)
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, metric: str, /, **labels: str) -> float | None:
    """The sample of ``metric`` with exactly ``labels``; None if there is none."""
    return samples.get((metric, frozenset(labels.items())))


def total(samples: Samples, metric: str, /, **labels: str) -> float:
    """The sum of the samples of ``metric`` whose labels include ``labels``."""
    wanted = frozenset(labels.items())
    return sum(v for (name, have), v in samples.items() if name == metric and wanted <= have)


def buckets(samples: Samples, histogram: str, labels: Mapping[str, str]) -> dict[float, float]:
    """The cumulative bucket counts of ``histogram`` by upper bound, summed over the samples
    whose labels include ``labels``."""
    wanted = frozenset(labels.items())
    counts: dict[float, float] = {}
    for (name, have), count in samples.items():
        if name == f"{histogram}_bucket" and wanted <= have:
            bound = float(dict(have)["le"])
            counts[bound] = counts.get(bound, 0.0) + count
    return counts


def page(url: str) -> requests.Response:
    """The answer of a /metrics ``url`` on this machine; raises for an error status."""
    with requests.Session() as session, warnings.catch_warnings():
        session.trust_env = False  # no proxy between us and 127.0.0.1
        # kube-scheduler serves with a certificate it made itself.
        warnings.simplefilter("ignore", InsecureRequestWarning)
        response = session.get(url, timeout=10, verify=False)
    response.raise_for_status()
    return response


def read(url: str) -> Samples:
    """Every sample ``url`` serves; raises (an OSError) while nothing answers."""
    return samples_of(page(url).text)


def scrape(url: str) -> Samples | None:
    """Every sample of an exposition served as text, or None while nothing answers."""
    try:
        response = page(url)
    except OSError:
        return None
    assert response.headers["Content-Type"].startswith("text/plain")
    return samples_of(response.text)


def requests_by_kind(samples: Samples) -> Counter[str]:
    """kube-apiserver's requests (every client's) by verb and resource/subresource."""
    counts: Counter[str] = Counter()
    for (name, have), count in samples.items():
        if name == REQUESTS:
            labels = dict(have)
            kind = "/".join(filter(None, (labels.get("resource"), labels.get("subresource"))))
            counts[f"{labels['verb']} {kind}"] += round(count)
    return counts
