"""Schedulers that start a stage's jobs: stage 05's emulated EventBridge Scheduler, and the
replicas' own loop (harness.engine.model.schedulers), registered in the order their starts run."""

from harness.engine.model import registry
from harness.engine.model.schedulers import OwnLoop
from harness.schedulers.eventbridge_scheduler import (
    DuplicateDelivery,
    EventBridge,
    RunTaskRefused,
)

registry.add_fault(DuplicateDelivery())
registry.add_fault(RunTaskRefused())
registry.add_scheduler(EventBridge())  # a task due at an instant starts before its ticks
registry.add_scheduler(OwnLoop())
