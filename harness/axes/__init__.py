"""The lab's own run axes (harness.engine.model.axes): settings every run is made with."""
