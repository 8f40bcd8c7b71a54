"""racelab's engine, one package per role; imports run one way, from the top of this list down:

- `explore`: step mode, the search of schedules and its shares (drives runs of `run`);
- `run`: the harness side of one run: the runner, the fleet (agenda and barrier), the replica and
  zygote processes, a matrix's cells;
- `inside`: what runs inside a replica or task process: the agent, the seams around the app's
  SQL, the messages both sides exchange;
- `views`: what people look at: terminal tables, pictures, pages (read a run's result only);
- `model`: data and declarations, no processes: scenarios, stages, tracks, faults, the history.
"""
