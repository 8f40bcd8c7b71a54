"""Runs whose same-instant steps are chosen one statement at a time: step mode, the search of
every schedule up to a bound, its shares, and what an exploration found."""
