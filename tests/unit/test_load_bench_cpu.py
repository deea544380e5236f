"""Pure parts of the load benchmark's ingest CPU accounting (scripts/bench/load.py): each process
role's CPU over an ingest phase, a memory, and the report's table of it."""

from __future__ import annotations

from scripts.bench.load import _ingest_cpu_rows, cpu_per_memory


def test_cpu_a_memory_is_each_roles_cpu_between_the_readings_over_the_memories() -> None:
    before = {"api": 10.0, "falkordb": 4.0}
    after = {"api": 12.0, "falkordb": 5.0, "worker": 0.5}  # a role that started in between
    assert cpu_per_memory(before, after, 1000) == {"cpu_ms": {"api": 2.0, "falkordb": 1.0, "worker": 0.5}}


def test_no_cpu_is_reported_for_a_service_of_another_run_or_an_empty_phase() -> None:
    assert cpu_per_memory({}, {}, 1000) == {}  # --url: the service's processes are unknown
    assert cpu_per_memory({"api": 1.0}, {"api": 2.0}, 0) == {}


def test_the_report_has_one_row_a_phase_and_a_column_for_each_role_that_spent_cpu() -> None:
    ingest = {
        "single_c1": {"per_s": 250.0, "cpu_ms": {"api": 2.0, "cron": 0.0, "falkordb": 1.5}},
        "batch": {
            "per_s": 2000.0,
            "batch_size": 200,
            "concurrency": 2,
            "cpu_ms": {"api": 0.3, "worker": 0.1},
        },
    }
    assert _ingest_cpu_rows(ingest) == [
        "",
        "| CPU ms a memory | api | falkordb | worker |",
        "|---|---|---|---|",
        "| single_c1 | 2.0 | 1.5 |  |",
        "| batch (x200, c2) | 0.3 |  | 0.1 |",
    ]
    assert _ingest_cpu_rows({"single_c1": {"per_s": 250.0}}) == []
