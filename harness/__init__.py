"""racelab's engine: runs a stage as replica processes on a virtual clock and counts what landed."""
