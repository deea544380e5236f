"""Fuzzing the HTTP API from its own OpenAPI document (schemathesis on hypothesis).

Every operation of `GET /openapi.json` gets generated requests that fit the schema (positive)
and that break it (negative), sent to the real app (WSGI; real embedded FalkorDB and Qdrant Edge)
with valid API and admin keys, and one request in eight without any key. Checks: no response is
a 5xx, every 4xx/5xx body is the error envelope,
status codes, content types and bodies conform to the document, and a rejected write changed
nothing in the graph.

Bounded for CI: FUZZ_EXAMPLES (default 8) examples per operation and mode. `make fuzz` runs a long
pass. With FUZZ_SUMMARY=path, the counts (inputs tried, responses by status, per operation) are
written there as JSON; they are printed either way.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from automem.app import create_app, stop_app
from automem.services import Services
from automem.settings import Settings
from tests.conftest import ADMIN_TOKEN, API_TOKEN
from tests.envelope import envelope_problem

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
SUMMARY = os.environ.get("FUZZ_SUMMARY")
ONLY = os.environ.get("FUZZ_ONLY", "")  # a path prefix, to fuzz some operations while debugging
AUTH = {"X-API-Key": API_TOKEN, "X-Admin-Token": ADMIN_TOKEN}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Not fuzzed, tested in tests/integration/test_stream.py instead: a live stream answers for minutes
# (the WSGI client would read it to its end), and the viewer paths redirect any request to /ui/.
NOT_FUZZED = {"/stream", "/viewer/", "/viewer/{subpath}"}


class Tally:
    def __init__(self) -> None:
        self.inputs = 0
        self.statuses: Counter[int] = Counter()
        self.per_operation: dict[str, Counter[int]] = {}
        self.failures: list[str] = []

    def record(self, label: str, status: int) -> None:
        self.inputs += 1
        self.statuses[status] += 1
        self.per_operation.setdefault(label, Counter())[status] += 1

    def report(self, seconds: float) -> dict[str, Any]:
        return {
            "examples_per_operation_and_mode": EXAMPLES,
            "inputs": self.inputs,
            "seconds": round(seconds, 1),
            "responses_by_status": {str(k): v for k, v in sorted(self.statuses.items())},
            "responses_5xx": sum(v for k, v in self.statuses.items() if k >= 500),
            "failures": len(self.failures),
            "operations": {
                label: {str(k): v for k, v in sorted(counts.items())}
                for label, counts in sorted(self.per_operation.items())
            },
        }


def _check_envelope(response: Any) -> str | None:
    """None when a 4xx/5xx body is the one error envelope, else what is wrong."""
    if response.status_code < 400:
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        return f"{response.status_code} body is not JSON: {response.content[:200]!r}"
    return envelope_problem(response.status_code, body)


@schemathesis.serializer("application/gzip")
def _gzip_body(ctx: Any, value: Any) -> bytes:
    """POST /admin/restore takes an archive: the generated value, as bytes (random bytes are
    never a valid archive, so the route's 400 `invalid_archive` path is what gets exercised)."""
    return value if isinstance(value, bytes) else str(value).encode()


def _exercise(case: Any, anonymous: bool, services: Services, tally: Tally) -> list[str]:
    """Send one generated request; what is wrong with the answer (nothing: an empty list)."""
    operation = case.operation
    label = f"{operation.method.upper()} {operation.path}"
    writes = operation.method.upper() in ("POST", "PATCH", "PUT", "DELETE")
    headers = {} if anonymous else AUTH
    before = services.graph.counts()["total"] if writes else None
    response = case.call(headers=headers)
    tally.record(label, response.status_code)
    problems = []
    if problem := _check_envelope(response):
        problems.append(problem)
    if response.status_code >= 500:
        problems.append(f"server error {response.status_code}: {response.content[:300]!r}")
    if not anonymous and response.status_code == 401 and _carried_both_keys(response):
        problems.append("401 with a valid key")
    if anonymous and response.status_code not in (401, 404, 405) and not _public(operation):
        problems.append(f"{response.status_code} without a key")
    if before is not None and 400 <= response.status_code < 500:
        after = services.graph.counts()["total"]
        if after != before:
            problems.append(f"a rejected write changed the memory count {before} -> {after}")
    try:
        case.validate_response(response, checks=CHECKS, headers=headers)
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis groups a case's failures
        problems.append(f"{type(exc).__name__}: {str(exc)[:600]}")
    return problems


def _carried_both_keys(response: Any) -> bool:
    """Negative cases may drop a security header (the admin token): a 401 is then right."""
    sent = response.request.headers
    return all(sent.get(name) == value for name, value in AUTH.items())


def _fuzz_operation(operation: Any, app: Flask, tally: Tally) -> None:
    """Both modes; routes of one memory also once more with the id of a real (fresh) memory, since
    random ids only ever reach the 404 branch."""
    services: Services = app.extensions["automem"]
    calls = itertools.count()
    bindings: list[dict[str, str]] = [{}]
    if "{memory_id}" in operation.path:
        bindings.append({"memory_id": _fresh_memory(app)})
    for path_parameters in bindings:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz_mode(operation, mode, services, tally, calls, path_parameters)


def _fresh_memory(app: Flask) -> str:
    body = {"content": f"fuzz target {next(_SEEDS)}", "tags": ["fuzz", "a:b"], "metadata": {"k": 1}}
    response = app.test_client().post("/memory", json=body, headers=AUTH)
    assert response.status_code == 201, response.get_json()
    return str(response.get_json()["memory_id"])


_SEEDS = itertools.count()


def _fuzz_mode(
    operation: Any,
    mode: GenerationMode,
    services: Services,
    tally: Tally,
    calls: itertools.count[int],
    path_parameters: dict[str, str],
) -> None:
    bound = " [existing id]" if path_parameters else ""
    label = f"{operation.method.upper()} {operation.path} [{mode.value}]{bound}"
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters or None)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: every failure is collected
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        anonymous = next(calls) % 8 == 7  # one request in eight without any key
        if problems := _exercise(case, anonymous, services, tally):
            tally.failures.append(f"{label} {case.as_curl_command()}\n  " + "\n  ".join(problems))

    try:
        run()
    except Unsatisfiable:
        # Nothing to break in an operation without parameters or body (e.g. GET /health).
        if mode is GenerationMode.POSITIVE:
            raise


def _markdown(report: dict[str, Any]) -> str:
    statuses = sorted({code for counts in report["operations"].values() for code in counts}, key=int)
    lines = [
        f"# Fuzzing the API from /openapi.json ({time.strftime('%Y-%m-%d')})",
        "",
        f"Command: `make fuzz FUZZ_EXAMPLES={EXAMPLES}` (schemathesis, positive and negative examples per",
        "operation, one request in eight without a key, routes of one memory also with a real id).",
        "",
        f"**{report['inputs']} inputs** over {report['operation_count']} operations "
        f"in {report['seconds']} s;",
        f"{report['responses_5xx']} responses were 5xx;",
        f"{report['failures']} failures (a 5xx, an error outside the envelope, a response the document",
        "does not describe, or a rejected write that changed the graph).",
        "",
        "| operation | " + " | ".join(statuses) + " |",
        "|---|" + "---|" * len(statuses),
    ]
    for label, counts in report["operations"].items():
        lines.append(f"| {label} | " + " | ".join(str(counts.get(code, "")) for code in statuses) + " |")
    totals = report["responses_by_status"]
    lines.append("| **all** | " + " | ".join(f"**{totals.get(code, 0)}**" for code in statuses) + " |")
    return "\n".join(lines) + "\n"


def _public(operation: Any) -> bool:
    return operation.definition.raw.get("security") == []


@pytest.fixture
def fuzz_app(settings: Settings) -> Iterator[Flask]:
    """The app without the write rate limit, so every generated write reaches its handler."""
    unlimited = settings.model_copy(update={"rate_limit_per_minute": 0})
    application = create_app(unlimited, start_vector_drain=False)
    yield application
    stop_app(application)


def test_fuzz_the_api_from_its_openapi_document(fuzz_app: Flask) -> None:
    schema = schemathesis.openapi.from_wsgi("/openapi.json", fuzz_app, headers=AUTH)
    tally = Tally()
    started = time.monotonic()
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path in NOT_FUZZED or not operation.path.startswith(ONLY):
            continue
        _fuzz_operation(operation, fuzz_app, tally)
        operations += 1
    report = {"operation_count": operations, **tally.report(time.monotonic() - started)}
    if SUMMARY:
        Path(SUMMARY).write_text(json.dumps(report, indent=2) + "\n")
        Path(SUMMARY).with_suffix(".md").write_text(_markdown(report))
    print(
        f"\nfuzz: {report['inputs']} inputs over {operations} operations in {report['seconds']} s; "
        f"responses by status {report['responses_by_status']}; {report['failures']} failures"
    )
    assert operations >= (25 if not ONLY else 1)
    assert tally.inputs >= operations * 2
    assert not tally.failures, f"{len(tally.failures)} failures:\n" + "\n".join(tally.failures[:40])
