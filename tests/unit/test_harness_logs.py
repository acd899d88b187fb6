"""The e2e harness's reading of an operator's log for an HTTP status: a status the API server
answered counts, the same digits as a log line's milliseconds or inside an identifier do not."""

from __future__ import annotations

import pytest
from harness.e2e import logs_status

CASES = [
    ("a refused request", "GET /api/v1/pods: 403 Forbidden", 403, True),
    ("the status named", "the API server answered status 403", 403, True),
    ("a log line's milliseconds", "2026-12-07 12:24:06,403 INFO bound web-1", 403, False),
    ("milliseconds after a dot", "12:24:06.401 lease renewed", 401, False),
    ("inside a uuid", "holder vm-1d2e-b401-77aa", 401, False),
    ("another status", "GET /api/v1/pods: 404 Not Found", 403, False),
]


@pytest.mark.parametrize(
    ("logs", "code", "told"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_a_status_is_read_as_the_api_servers_answer(logs: str, code: int, told: bool) -> None:
    assert logs_status(logs, code) is told
