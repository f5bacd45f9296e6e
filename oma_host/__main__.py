"""``python -m oma_host`` is the ``oma-host`` command."""

import sys

from oma_host.cli.entry import main

sys.exit(main())
