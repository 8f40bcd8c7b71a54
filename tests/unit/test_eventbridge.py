"""Stage 05's scheduler: the committed CloudFormation template and the harness's emulation of it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from harness.engine.model import scenario
from harness.schedulers.eventbridge import (
    Schedule,
    fire_times,
    format_scheduled_time,
    load_schedules,
    render_command,
)
from harness.schedulers.eventbridge_scheduler import EventBridgeScheduler

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "05-eventbridge" / "infra"
TEMPLATE = INFRA / "template.json"
MX = ZoneInfo("America/Mexico_City")
NY = ZoneInfo("America/New_York")
UTC = ZoneInfo("UTC")

_MISSING = [m for m in ("aws_cdk", "cfnlint") if importlib.util.find_spec(m) is None]
needs_infra = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"{', '.join(_MISSING)} not installed: pip install -e '.[infra]' (CI installs it)",
)

LEADERBOARD_COMMAND = (
    "python",
    "-m",
    "myapp.jobs",
    "leaderboard_close",
    "--now",
    "<aws.scheduler.scheduled-time>",
)


def mx(*args: int) -> datetime:
    return datetime(*args, tzinfo=MX)


def _template() -> dict:
    return json.loads(TEMPLATE.read_text())


def _resources(template: dict, type_: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def _only(template: dict, type_: str) -> tuple[str, dict]:
    found = _resources(template, type_)
    assert len(found) == 1, f"expected one {type_}, found {sorted(found)}"
    return next(iter(found.items()))


def _offline_env() -> dict[str, str]:
    """The current environment without AWS credentials or profiles, and no metadata lookups."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return env


# --- synthesis and lint (need the infra extra) -----------------------------------------------


@needs_infra
def test_committed_template_matches_a_fresh_synth(tmp_path: Path) -> None:
    """The committed template.json is exactly what the CDK app synthesises now (no drift)."""
    out = tmp_path / "template.json"
    result = subprocess.run(
        [sys.executable, str(INFRA / "synth.py"), "--out", str(out)],
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_text() == TEMPLATE.read_text(), (
        "template.json drifted from the CDK app: run `python 05-eventbridge/infra/synth.py`"
    )


@needs_infra
def test_cfn_lint_reports_nothing_on_the_template() -> None:
    """cfn-lint finds no error, warning or finding in the committed template."""
    cfn_lint = shutil.which("cfn-lint", path=str(Path(sys.executable).parent)) or shutil.which(
        "cfn-lint"
    )
    assert cfn_lint, "cfn-lint is importable but its console script is not on PATH"
    result = subprocess.run(
        [cfn_lint, "--", str(TEMPLATE)],
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


# --- the template, as committed ------------------------------------------------------------------


def test_template_has_one_schedule_fridays_1800_mexico_city() -> None:
    """The leaderboard schedule is `cron(0 18 ? * FRI *)` in Mexico City, on time (no window)."""
    _, schedule = _only(_template(), "AWS::Scheduler::Schedule")
    props = schedule["Properties"]
    assert props["ScheduleExpression"] == "cron(0 18 ? * FRI *)"
    assert props["ScheduleExpressionTimezone"] == "America/Mexico_City"
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert props["State"] == "ENABLED"


def test_template_retries_a_failed_delivery_within_eventbridge_limits() -> None:
    """A failed RunTask is retried 3 times within an hour, not dropped after one attempt."""
    _, schedule = _only(_template(), "AWS::Scheduler::Schedule")
    retry = schedule["Properties"]["Target"]["RetryPolicy"]
    assert retry == {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600}
    assert 0 < retry["MaximumRetryAttempts"] <= 185
    assert 60 <= retry["MaximumEventAgeInSeconds"] <= 86_400


def test_template_sends_exhausted_slots_to_an_sqs_dead_letter_queue() -> None:
    """A slot whose retries run out lands in the stack's SQS queue, where it can be seen."""
    template = _template()
    _, schedule = _only(template, "AWS::Scheduler::Schedule")
    queue_id, _ = _only(template, "AWS::SQS::Queue")
    dlq = schedule["Properties"]["Target"]["DeadLetterConfig"]
    assert dlq == {"Arn": {"Fn::GetAtt": [queue_id, "Arn"]}}


def test_task_input_passes_the_scheduled_time_not_a_per_attempt_id() -> None:
    """The container command carries `<aws.scheduler.scheduled-time>`, the same on every retry."""
    template = _template()
    _, schedule = _only(template, "AWS::Scheduler::Schedule")
    raw_input = schedule["Properties"]["Target"]["Input"]
    assert json.loads(raw_input) == {
        "containerOverrides": [{"name": "app", "command": list(LEADERBOARD_COMMAND)}]
    }
    assert "<aws.scheduler.execution-id>" not in raw_input
    assert "<aws.scheduler.attempt-number>" not in raw_input
    task_id, task = _only(template, "AWS::ECS::TaskDefinition")
    assert [c["Name"] for c in task["Properties"]["ContainerDefinitions"]] == ["app"]


def test_target_runs_the_task_definition_on_fargate_in_the_stack_cluster() -> None:
    """The target is ECS RunTask: one Fargate task of the stack's task definition and cluster."""
    template = _template()
    _, schedule = _only(template, "AWS::Scheduler::Schedule")
    cluster_id, _ = _only(template, "AWS::ECS::Cluster")
    task_id, _ = _only(template, "AWS::ECS::TaskDefinition")
    target = schedule["Properties"]["Target"]
    assert target["Arn"] == {"Fn::GetAtt": [cluster_id, "Arn"]}
    ecs = target["EcsParameters"]
    assert (ecs["TaskDefinitionArn"], ecs["LaunchType"], ecs["TaskCount"]) == (
        {"Ref": task_id},
        "FARGATE",
        1,
    )


def test_scheduler_role_is_trusted_by_eventbridge_scheduler_and_may_run_the_task() -> None:
    """The target role trusts scheduler.amazonaws.com and may RunTask, PassRole and send to DLQ."""
    template = _template()
    _, schedule = _only(template, "AWS::Scheduler::Schedule")
    role_id = schedule["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
    role = template["Resources"][role_id]
    assert role["Type"] == "AWS::IAM::Role"
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [(s["Effect"], s["Action"], s["Principal"]) for s in trust] == [
        ("Allow", "sts:AssumeRole", {"Service": "scheduler.amazonaws.com"})
    ]
    policies = [
        p
        for p in _resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    actions = {
        action
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert {"ecs:RunTask", "iam:PassRole", "sqs:SendMessage"} <= actions
    task_id, _ = _only(template, "AWS::ECS::TaskDefinition")
    run_task = [
        s
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "ecs:RunTask"
    ]
    assert [s["Resource"] for s in run_task] == [{"Ref": task_id}]


def test_load_schedules_reads_the_committed_template() -> None:
    """The harness sees exactly the deployed schedule: one job, its retries, DLQ and command."""
    assert load_schedules(TEMPLATE) == [
        Schedule(
            name="leaderboard_close",
            expression="cron(0 18 ? * FRI *)",
            timezone="America/Mexico_City",
            max_retries=3,
            max_event_age_s=3600,
            dlq=True,
            command=LEADERBOARD_COMMAND,
        )
    ]
    assert load_schedules(TEMPLATE)[0].max_attempts == 4


def test_load_schedules_applies_eventbridge_defaults_and_skips_disabled(tmp_path: Path) -> None:
    """No RetryPolicy means 185 retries within 24 h; a DISABLED schedule never fires."""
    command = ["python", "-m", "myapp.jobs", "zombie_threads"]
    overrides = json.dumps({"containerOverrides": [{"name": "app", "command": command}]})

    def schedule(state: str) -> dict:
        return {
            "Type": "AWS::Scheduler::Schedule",
            "Properties": {
                "ScheduleExpression": "rate(15 minutes)",
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "State": state,
                "Target": {"Arn": "arn", "RoleArn": "role", "Input": overrides},
            },
        }

    path = tmp_path / "template.json"
    path.write_text(
        json.dumps({"Resources": {"On": schedule("ENABLED"), "Off": schedule("DISABLED")}})
    )
    assert load_schedules(path) == [
        Schedule("zombie_threads", "rate(15 minutes)", "UTC", 185, 86_400, False, tuple(command))
    ]


# --- fire times ----------------------------------------------------------------------------------


def test_leaderboard_fires_fridays_at_1800_mexico_city() -> None:
    """Two weeks hold exactly two slots: Friday 29 May and Friday 5 June 2026, 18:00 UTC-6."""
    times = fire_times(
        "cron(0 18 ? * FRI *)", "America/Mexico_City", mx(2026, 5, 25), mx(2026, 6, 8)
    )
    assert times == [mx(2026, 5, 29, 18), mx(2026, 6, 5, 18)]
    assert [t.isoformat() for t in times] == [
        "2026-05-29T18:00:00-06:00",
        "2026-06-05T18:00:00-06:00",
    ]
    assert [t.tzinfo for t in times] == [MX, MX]


def test_fire_times_include_start_and_exclude_end() -> None:
    """The range is half-open: a slot at `start` fires, a slot at `end` is the next range's."""
    assert fire_times(
        "cron(0 18 ? * FRI *)", "America/Mexico_City", mx(2026, 5, 29, 18), mx(2026, 6, 5, 18)
    ) == [mx(2026, 5, 29, 18)]


def test_fire_times_are_computed_in_the_schedule_timezone_not_the_range_timezone() -> None:
    """A UTC range finds the Mexico City slot at 00:00 UTC on Saturday."""
    start, end = datetime(2026, 5, 29, tzinfo=UTC), datetime(2026, 5, 31, tzinfo=UTC)
    times = fire_times("cron(0 18 ? * FRI *)", "America/Mexico_City", start, end)
    assert [t.astimezone(UTC) for t in times] == [datetime(2026, 5, 30, 0, 0, tzinfo=UTC)]


def test_cron_lists_ranges_steps_and_names() -> None:
    """Minute steps, an hour range and a named weekday range give the exact weekday slots."""
    times = fire_times(
        "cron(0/20 9-10 ? * MON-FRI *)",
        "UTC",
        datetime(2026, 5, 29, tzinfo=UTC),
        datetime(2026, 6, 2, tzinfo=UTC),
    )
    expected_days = [(5, 29), (6, 1)]  # Friday, then Monday (Sat 30 and Sun 31 skipped)
    assert times == [
        datetime(2026, m, d, h, mi, tzinfo=UTC)
        for m, d in expected_days
        for h in (9, 10)
        for mi in (0, 20, 40)
    ]


def test_cron_day_of_month_list_month_names_and_year() -> None:
    """`cron(30 8 1,15 JAN,JUL ? 2026)` fires four times in 2026 and never in 2027."""
    times = fire_times(
        "cron(30 8 1,15 JAN,JUL ? 2026)", "America/Mexico_City", mx(2026, 1, 1), mx(2028, 1, 1)
    )
    assert times == [
        mx(2026, 1, 1, 8, 30),
        mx(2026, 1, 15, 8, 30),
        mx(2026, 7, 1, 8, 30),
        mx(2026, 7, 15, 8, 30),
    ]


def test_cron_numeric_weekdays_count_from_sunday() -> None:
    """Day-of-week 1 is Sunday and 6 is Friday, as in EventBridge (not cron's 0-6)."""
    start, end = mx(2026, 5, 25), mx(2026, 6, 1)
    assert fire_times("cron(0 18 ? * 6 *)", "America/Mexico_City", start, end) == [
        mx(2026, 5, 29, 18)
    ]
    assert fire_times("cron(0 9 ? * 1 *)", "America/Mexico_City", start, end) == [
        mx(2026, 5, 31, 9)
    ]
    assert fire_times("cron(0 9 ? * SUN,SAT *)", "America/Mexico_City", start, end) == [
        mx(2026, 5, 30, 9),
        mx(2026, 5, 31, 9),
    ]


def test_cron_skips_a_time_lost_to_spring_forward_and_fires_once_on_fall_back() -> None:
    """In New York 02:30 on 8 March 2026 does not exist and 01:30 on 1 November happens twice."""
    spring = fire_times(
        "cron(30 2 * * ? *)",
        "America/New_York",
        datetime(2026, 3, 7, tzinfo=NY),
        datetime(2026, 3, 10, tzinfo=NY),
    )
    assert [t.isoformat() for t in spring] == [
        "2026-03-07T02:30:00-05:00",
        "2026-03-09T02:30:00-04:00",
    ]
    fall = fire_times(
        "cron(30 1 * * ? *)",
        "America/New_York",
        datetime(2026, 11, 1, tzinfo=NY),
        datetime(2026, 11, 2, tzinfo=NY),
    )
    assert [t.isoformat() for t in fall] == ["2026-11-01T01:30:00-04:00"]


def test_rate_counts_elapsed_time_from_start() -> None:
    """`rate(15 minutes)` over one hour fires 4 times; `rate(1 day)` stays 24 h apart across DST."""
    quarter = fire_times(
        "rate(15 minutes)", "America/Mexico_City", mx(2026, 5, 29, 18), mx(2026, 5, 29, 19)
    )
    assert quarter == [mx(2026, 5, 29, 18, m) for m in (0, 15, 30, 45)]
    daily = fire_times(
        "rate(1 day)",
        "America/New_York",
        datetime(2026, 3, 7, 12, tzinfo=NY),
        datetime(2026, 3, 10, tzinfo=NY),
    )
    assert [t.isoformat() for t in daily] == [
        "2026-03-07T12:00:00-05:00",
        "2026-03-08T13:00:00-04:00",
        "2026-03-09T13:00:00-04:00",
    ]


def test_at_fires_once_inside_the_range_and_never_outside() -> None:
    """A one-time schedule fires at its local time if that falls in the range, else not at all."""
    expression = "at(2026-05-29T18:00:00)"
    assert fire_times(expression, "America/Mexico_City", mx(2026, 5, 29), mx(2026, 5, 30)) == [
        mx(2026, 5, 29, 18)
    ]
    assert fire_times(expression, "America/Mexico_City", mx(2026, 5, 30), mx(2026, 6, 30)) == []


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("cron(0 18 ? * 6L *)", NotImplementedError),
        ("cron(0 18 ? * FRI#2 *)", NotImplementedError),
        ("cron(0 18 L * ? *)", NotImplementedError),
        ("cron(0 18 15W * ? *)", NotImplementedError),
        ("cron(0 18 * * FRI *)", ValueError),  # day-of-month and day-of-week both set
        ("cron(0 18 ? * ? *)", ValueError),  # neither set
        ("cron(0 18 ? * FRI)", ValueError),  # five fields: Unix cron, not EventBridge
        ("cron(60 18 ? * FRI *)", ValueError),
        ("cron(0 18 ? * 0 *)", ValueError),  # day-of-week starts at 1
        ("cron(0 20-18 ? * FRI *)", ValueError),
        ("rate(0 minutes)", ValueError),
        ("rate(2 weeks)", ValueError),
        ("at(2026-05-29 18:00)", ValueError),
        ("every(5 minutes)", ValueError),
    ],
)
def test_unsupported_or_invalid_expressions_raise(expression: str, error: type[Exception]) -> None:
    """An expression the emulator cannot evaluate exactly fails loudly instead of firing wrongly."""
    with pytest.raises(error):
        fire_times(expression, "America/Mexico_City", mx(2026, 5, 25), mx(2026, 6, 8))


def test_fire_times_refuse_naive_datetimes() -> None:
    """A naive range has no meaning across time zones, so it is an error."""
    with pytest.raises(ValueError, match="aware"):
        fire_times(
            "cron(0 18 ? * FRI *)", "America/Mexico_City", datetime(2026, 5, 25), mx(2026, 6, 8)
        )


# --- commands ------------------------------------------------------------------------------------


def test_every_retry_of_one_slot_runs_the_same_command() -> None:
    """Attempts 1-4 of the 29 May slot all run `--now 2026-05-30T00:00:00Z`, the same claim key."""
    (schedule,) = load_schedules(TEMPLATE)
    commands = [render_command(schedule, mx(2026, 5, 29, 18), attempt=n) for n in range(1, 5)]
    expected = ["python", "-m", "myapp.jobs", "leaderboard_close", "--now", "2026-05-30T00:00:00Z"]
    assert commands == [expected] * 4


def test_scheduled_time_maps_back_to_the_slot_week_in_mexico_city() -> None:
    """The UTC time EventBridge sends is Friday 18:00 in Mexico City, ISO week 2026-W22."""
    sent = format_scheduled_time(mx(2026, 5, 29, 18))
    assert sent == "2026-05-30T00:00:00Z"
    local = datetime.fromisoformat(sent).astimezone(MX)
    assert local == mx(2026, 5, 29, 18)
    assert local.isocalendar()[:2] == (2026, 22)


def test_per_attempt_attributes_change_on_every_retry() -> None:
    """execution-id and attempt-number change per attempt: useless as a claim key."""
    schedule = Schedule(
        name="probe",
        expression="cron(0 18 ? * FRI *)",
        timezone="America/Mexico_City",
        max_retries=3,
        max_event_age_s=3600,
        dlq=True,
        command=(
            "probe",
            "<aws.scheduler.scheduled-time>",
            "<aws.scheduler.execution-id>",
            "attempt=<aws.scheduler.attempt-number>",
        ),
    )
    first, second = (render_command(schedule, mx(2026, 5, 29, 18), attempt=n) for n in (1, 2))
    assert (first[1], second[1]) == ("2026-05-30T00:00:00Z", "2026-05-30T00:00:00Z")
    assert first[2] != second[2]
    assert (first[3], second[3]) == ("attempt=1", "attempt=2")
    assert render_command(schedule, mx(2026, 5, 29, 18), attempt=1) == first  # reproducible
    assert render_command(schedule, mx(2026, 5, 29, 18), execution_id="d32c5kddcf5bb8c3")[2] == (
        "d32c5kddcf5bb8c3"
    )


def test_a_duplicated_delivery_gets_its_own_execution_id() -> None:
    """Two deliveries of one slot share the scheduled time but not the execution id, as AWS
    assigns one per invocation: the reason exercise 05's claim key pays twice."""
    schedule = Schedule(name="probe", expression="cron(0 18 ? * FRI *)",
                        timezone="America/Mexico_City", max_retries=0, max_event_age_s=3600,
                        dlq=True, command=("<aws.scheduler.scheduled-time>",
                                           "<aws.scheduler.execution-id>"))
    sc = scenario.resolve("double-delivery", "cron")
    slot = datetime(2026, 5, 29, 18, tzinfo=ZoneInfo("America/Mexico_City"))
    first, second = EventBridgeScheduler([schedule], sc)._queue
    assert (first.command[0], second.command[0]) == ("2026-05-30T00:00:00Z",) * 2
    assert first.now == second.now == slot
    assert first.command[1] != second.command[1]
