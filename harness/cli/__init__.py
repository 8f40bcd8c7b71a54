"""racelab's command line: the commands (`main`), `step` and `explore` (`step`), the options that
only mean something together, how the CLI writes, and a run's result as it prints it."""
