"""What runs inside a lab process (a replica or a task): the agent, the seams it installs around
the app's SQL, and the messages it exchanges with the harness over its pipe."""
