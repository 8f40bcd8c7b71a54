"""A creator platform's API, as far as its alerts are concerned."""
