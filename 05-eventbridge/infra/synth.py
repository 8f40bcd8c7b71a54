"""Synthesise the stack offline and write template.json deterministically.

    python 05-eventbridge/infra/synth.py [--out PATH]

No AWS credentials, no network, no CDK CLI: aws-cdk-lib synthesises through its bundled node
runtime. The output is sorted JSON without CDK metadata, so `git diff` shows only real changes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# jsii prints a banner when the machine's node is past jsii's support window (node 20 here);
# synthesis still works, and the banner would bury real output in every test run.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
sys.path.insert(0, str(HERE))

from app import STACK_NAME, build_app  # noqa: E402  (needs the environment above)


def synth_template() -> dict:
    """The stack's CloudFormation template, CDK metadata stripped."""
    with tempfile.TemporaryDirectory() as outdir:
        app, _ = build_app(outdir)
        assembly = app.synth()
        template = assembly.get_stack_by_name(STACK_NAME).template
    template.get("Metadata", {}).pop("AWS::CDK::Metadata", None)
    if template.get("Metadata") == {}:
        del template["Metadata"]
    for resource in template.get("Resources", {}).values():
        resource.pop("Metadata", None)
    return template


def render(template: dict) -> str:
    return json.dumps(template, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "template.json")
    args = parser.parse_args(argv)
    args.out.write_text(render(synth_template()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
