"""``python -m oma_host`` is the ``oma-host`` command."""

import sys

from oma_host.cli.main import main

sys.exit(main())
