"""`automem bench`: a benchmark that stops with a message fails with it, not with a traceback."""

from __future__ import annotations

import pytest

from automem.cli.project import exit_status


def test_a_message_is_printed_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_status(SystemExit("automem serve exited with 1 before it was healthy")) == 1
    assert "exited with 1 before it was healthy" in capsys.readouterr().err


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (2, 2)])
def test_a_number_is_the_status(code: int | None, status: int) -> None:
    assert exit_status(SystemExit(code)) == status
