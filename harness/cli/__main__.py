"""`python -m harness.cli`: the racelab command, as the tests start it."""

import sys

from harness.cli.main import main

sys.exit(main())
