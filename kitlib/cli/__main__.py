"""``python -m kitlib.cli``: the ``kitlib`` command."""

import sys

from kitlib.cli import main

sys.exit(main())
