"""``python -m release``: see :mod:`release.cli`."""

import sys

from release.cli import main

sys.exit(main())
