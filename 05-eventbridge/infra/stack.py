"""The scheduler that replaces the replicas' wall-clock branch: one EventBridge Scheduler
schedule per job, each starting one short-lived Fargate task that runs the job CLI once."""

from __future__ import annotations

import json

from aws_cdk import Acknowledgment, CfnParameter, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

TIMEZONE = "America/Mexico_City"

# One line per job: the job's name in `myapp.jobs.JOBS` -> its EventBridge schedule expression,
# evaluated in TIMEZONE. The harness reads the synthesised template, not this dict.
JOBS: dict[str, str] = {
    "leaderboard_close": "cron(0 18 ? * FRI *)",
}

# EventBridge Scheduler retries the target call, RunTask, when the call fails (throttled, no
# capacity), never a task that started and then crashed. The post's CDK sketch sets no retry
# policy, which leaves the service's default: 185 retries within 24 hours. We set 3 within an
# hour: a refused call is a passing throttle or capacity gap, and a slot still refused an hour
# on is better seen in the dead-letter queue than retried into the night. Every attempt of one
# slot gets the same <aws.scheduler.scheduled-time>, which the job turns into its claim key, so
# a retried call that starts a second container for the slot pays nothing twice.
MAX_RETRY_ATTEMPTS = 3  # EventBridge allows 0-185
MAX_EVENT_AGE = Duration.hours(1)  # EventBridge allows 60 s - 24 h

CONTAINER_NAME = "app"
SCHEDULED_TIME = "<aws.scheduler.scheduled-time>"


def job_command(job: str) -> list[str]:
    """The container command for one delivery of `job`.

    `--now` is the slot's scheduled time, the same on every retry of that slot; the execution id
    and attempt number change per attempt and must never become a claim key.
    """
    return ["python", "-m", "myapp.jobs", job, "--now", SCHEDULED_TIME]


class SchedulerStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: object) -> None:
        super().__init__(scope, construct_id, **kwargs)

        image = CfnParameter(
            self,
            "ContainerImage",
            description="Image of the app (e.g. an ECR repository URI with a tag).",
        )
        subnets = CfnParameter(
            self,
            "SubnetIds",
            type="List<AWS::EC2::Subnet::Id>",
            description="Private subnets for the job tasks (with a NAT or VPC endpoints).",
        )
        security_groups = CfnParameter(
            self,
            "SecurityGroupIds",
            type="List<AWS::EC2::SecurityGroup::Id>",
            description="Security groups for the job tasks (must reach PostgreSQL).",
        )
        database_url = CfnParameter(
            self,
            "DatabaseUrlSecretArn",
            description="Secrets Manager secret holding DATABASE_URL for the job CLI.",
        )
        Validations.of(self).acknowledge(
            Acknowledgment(
                id="CloudFormation-Validate::W2509",
                reason="the parameter is the secret's ARN, not the secret; NoEcho would hide it",
            )
        )

        cluster = ecs.CfnCluster(self, "Cluster")

        task = ecs.FargateTaskDefinition(self, "JobTask", cpu=256, memory_limit_mib=512)
        task.add_container(
            CONTAINER_NAME,
            image=ecs.ContainerImage.from_registry(image.value_as_string),
            essential=True,
            logging=ecs.LogDriver.aws_logs(
                stream_prefix="job",
                log_group=logs.LogGroup(
                    self,
                    "JobLogs",
                    retention=logs.RetentionDays.ONE_MONTH,
                    removal_policy=RemovalPolicy.DESTROY,
                ),
            ),
            secrets={
                "DATABASE_URL": ecs.Secret.from_secrets_manager(
                    secretsmanager.Secret.from_secret_complete_arn(
                        self, "DatabaseUrl", database_url.value_as_string
                    )
                )
            },
        )

        dlq = sqs.Queue(
            self,
            "DeadLetters",
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )

        role = iam.Role(
            self,
            "SchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": self.account}},
            ),
            description="Assumed by EventBridge Scheduler to start the job tasks.",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["ecs:RunTask"],
                resources=[task.task_definition_arn],
                conditions={"ArnLike": {"ecs:cluster": cluster.attr_arn}},
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[task.task_role.role_arn, task.obtain_execution_role().role_arn],
                conditions={"StringLike": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
            )
        )
        dlq.grant_send_messages(role)

        for job, expression in JOBS.items():
            overrides = {
                "containerOverrides": [{"name": CONTAINER_NAME, "command": job_command(job)}]
            }
            scheduler.CfnSchedule(
                self,
                f"Schedule-{job}",
                description=f"racelab: start `myapp.jobs {job}` once per slot",
                schedule_expression=expression,
                schedule_expression_timezone=TIMEZONE,
                flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
                state="ENABLED",
                target=scheduler.CfnSchedule.TargetProperty(
                    arn=cluster.attr_arn,
                    role_arn=role.role_arn,
                    input=json.dumps(overrides, sort_keys=True),
                    ecs_parameters=scheduler.CfnSchedule.EcsParametersProperty(
                        task_definition_arn=task.task_definition_arn,
                        launch_type="FARGATE",
                        platform_version="LATEST",
                        task_count=1,
                        network_configuration=scheduler.CfnSchedule.NetworkConfigurationProperty(
                            awsvpc_configuration=scheduler.CfnSchedule.AwsVpcConfigurationProperty(
                                subnets=subnets.value_as_list,
                                security_groups=security_groups.value_as_list,
                                assign_public_ip="DISABLED",
                            )
                        ),
                    ),
                    retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                        maximum_retry_attempts=MAX_RETRY_ATTEMPTS,
                        maximum_event_age_in_seconds=int(MAX_EVENT_AGE.to_seconds()),
                    ),
                    dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(
                        arn=dlq.queue_arn
                    ),
                ),
            )
