"""Data and declarations: scenarios, stages, the registry and what registers in it (tracks, fault
kinds, job schedulers), virtual time, a run's history, timeline and result. Starts no process."""
