"""What the command modules share."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TypeAlias

from automem.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

# Said by the commands that talk to the running service instead of opening the stores.
VIA_API = (
    "It talks to the running service (`automem serve`, or --url) with AUTOMEM_API_TOKEN and "
    "ADMIN_API_TOKEN from the environment: in embedded mode the API process owns the Qdrant Edge "
    "shard, so the CLI never opens the stores itself."
)


def settings_with(args: argparse.Namespace, **extra: Any) -> Settings:
    """The settings, with the command line's --data-dir/--host/--port (and `extra`) on top."""
    names = ("data_dir", "host", "port")
    overrides = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    return load_settings(**overrides, **extra)
