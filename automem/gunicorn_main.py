"""`python -P -m automem.gunicorn_main [gunicorn options] APP`: gunicorn's command line as
`automem serve` runs it (see `embedded.api_command`), importing nothing from the working directory.

gunicorn puts its --chdir (by default the working directory) first on sys.path before it loads
its config and the app, so a folder there named `automem` (beside an AutoMem checkout, say)
shadowed this package: as a namespace package Flask found no root path for it, the API failed
to boot and was restarted forever. Here the working directory stays the process's working
directory (relative paths in settings keep their meaning) but is not put on sys.path; and since
this module is part of the package, `automem` (and `enrichment`, imported below) are bound to
the installed code before gunicorn starts.
"""

from __future__ import annotations

import os

from gunicorn.app.wsgiapp import WSGIApplication

import enrichment  # noqa: F401  (bound before gunicorn runs, like `automem` itself)
from automem.embedded import end_when_orphaned


class Application(WSGIApplication):
    def chdir(self) -> None:
        """gunicorn's chdir without its `sys.path.insert(0, chdir)`: the app is imported by package name."""
        os.chdir(self.cfg.chdir)


def main() -> None:
    end_when_orphaned()  # before gunicorn forks its workers
    Application("%(prog)s [OPTIONS] [APP_MODULE]", prog="gunicorn").run()


if __name__ == "__main__":
    main()
