"""The harness side of one run: the runner, the fleet that plays the agenda and keeps the
barrier, the replica and zygote processes, and a matrix's cells side by side."""
