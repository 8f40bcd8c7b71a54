"""Claims the stage READMEs make that the matrix alone does not show: who still decides "when",
which path runs a job, and what a claim does when the work after it fails."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import Counter

import pytest
import redis

from harness.infra.redis_server import start_redis_server
from harness.tracks.alerts.sink import AlertSink
from tests.helpers import ROOT, run


def _claims(stage: str, scenario_name: str) -> Counter[tuple[str, str]]:
    """(who, claim result) for every claim INSERT of one run."""
    return Counter((e.replica, e.detail) for e in run(stage, scenario_name).events
                   if e.event == "claim")


@pytest.mark.parametrize("stage", ["03", "04"])
def test_every_replica_still_decides_from_its_own_clock_that_the_job_is_due(pg, stage):
    """Staggered: B and C each find the window open and reach the claim, which stops them."""
    assert _claims(stage, "staggered") == Counter(
        {("A", "true"): 1, ("B", "false"): 1, ("C", "false"): 1})


def test_stage_05_no_replica_runs_the_job_only_the_scheduled_task_does(pg):
    """Staggered: the replicas tick but never claim; the one task the scheduler starts does."""
    assert _claims("05", "staggered") == Counter({("task-1", "true"): 1})


def test_stage_04_worker_and_cli_run_jobs_through_one_run_job():
    """The worker's tick and `python -m myapp.jobs` both call run_job and import no job."""
    app = ROOT / "04-cli-entrypoint" / "myapp"
    for caller in (app / "worker.py", app / "jobs" / "__main__.py"):
        tree = ast.parse(caller.read_text())
        calls = {n.func.id for n in ast.walk(tree)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "run_job" in calls, caller
        assert not imported & {"myapp.jobs.leaderboard_close", "myapp.leaderboard"}, caller


def test_alerts_01_keeps_a_claim_whose_webhook_failed_until_the_window_ends(tmp_path):
    """A's webhook call fails after its claim; B, a fresh process with a working webhook, finds
    the claim and stays quiet: the alert waits out its 24-hour window unsent."""
    script = tmp_path / "send.py"
    script.write_text(
        "import asyncio, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'alerts' / '01-redis-claim')!r})\n"
        "from datetime import datetime\nfrom zoneinfo import ZoneInfo\n"
        "from myapp.alerts import Alert, send_alert\n"
        "now = datetime(2026, 6, 5, 14, 0, tzinfo=ZoneInfo('America/Mexico_City'))\n"
        "alert = Alert('low_credits', '1', 'P2', 'credits low', creator_id=1)\n"
        "try:\n    print(asyncio.run(send_alert(alert, now)))\n"
        "except OSError as e:\n    print('webhook failed:', type(e).__name__)\n")
    server = start_redis_server()
    try:
        with AlertSink() as sink:
            env = {**os.environ, "REDIS_URL": server.url, "REDIS_KEY_PREFIX": "t:",
                   "SANDBOX_API_URL": sink.sandboxes_url}

            def send(replica: str, webhook: str) -> str:
                done = subprocess.run([sys.executable, str(script)], capture_output=True,
                                      text=True, timeout=60, env={**env, "REPLICA": replica,
                                                                  "ALERT_WEBHOOK_URL": webhook})
                assert done.returncode == 0, done.stderr
                return done.stdout.strip()

            assert send("A", "http://127.0.0.1:9/alerts") == "webhook failed: URLError"
            assert send("B", sink.alerts_url) == "False"
            assert sink.deliveries() == []
            ttl = redis.Redis.from_url(server.url).pttl("t:alert:low_credits:1")
            assert 23 * 3600 * 1000 < ttl <= 24 * 3600 * 1000
    finally:
        server.stop()
