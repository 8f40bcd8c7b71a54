"""CDK entry point (`cdk synth` runs this through cdk.json); `synth.py` is the offline path."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from stack import SchedulerStack

HERE = Path(__file__).resolve().parent
STACK_NAME = "racelab-scheduler"


def build_app(outdir: str | None = None) -> tuple[cdk.App, SchedulerStack]:
    """The app with cdk.json's context, so `cdk synth` and `synth.py` agree."""
    context = json.loads((HERE / "cdk.json").read_text())["context"]
    app = cdk.App(context=context, outdir=outdir, analytics_reporting=False)
    stack = SchedulerStack(
        app,
        STACK_NAME,
        # No bootstrap-version rule and no asset bucket: the template is self-contained.
        synthesizer=cdk.DefaultStackSynthesizer(generate_bootstrap_version_rule=False),
    )
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
