"""The command line: every subcommand explains itself, and re-embedding shows a progress bar."""

from __future__ import annotations

import json
from typing import Any

import pytest

from automem.cli import build_parser, main
from tests.integration.test_recall_api import store


def test_every_subcommand_help_explains_it(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"serve", "worker", "mcp", "reembed", "reconcile", "doctor", "bench"} <= set(commands)
    for name, sub in commands.items():
        assert sub.description and len(sub.description) > 20, name
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0
        assert sub.description.split()[0] in capsys.readouterr().out


def test_reembed_wait_shows_a_progress_bar(api: Any, jobs: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(3):
        store(api, f"memory number {n} to embed")
    jobs()  # embeds all three; installs the app's services for the command
    assert main(["reembed", "--wait", "--interval", "0.01"]) == 0
    captured = capsys.readouterr()
    queued = json.loads(captured.out.strip().splitlines()[-1])
    assert queued["queued"] == 0  # every memory already has a current vector
    assert "re-embedding" in captured.err and "3/3" in captured.err
