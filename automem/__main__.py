import sys

from automem.cli import main

sys.exit(main())
