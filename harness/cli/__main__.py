"""`python -m harness.cli`: the racelab command, as the tests start it, with the same first
lines as the installed command (harness.launch: a Ctrl-C during the imports is one line)."""

import sys

from harness.launch import main

sys.exit(main())
