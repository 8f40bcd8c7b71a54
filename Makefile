# racelab: every target uses the project's own .venv, created on first use.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
RACELAB := $(VENV)/bin/racelab
STAMP := $(VENV)/.installed

# stage-00 … stage-05 and alerts-00, alerts-01: one target per stage folder present
STAGES := $(foreach d,$(wildcard [0-9][0-9]-*/myapp),stage-$(word 1,$(subst -, ,$(d))))
ALERTS := $(foreach d,$(wildcard alerts/[0-9][0-9]-*/myapp),\
            alerts-$(word 1,$(subst -, ,$(notdir $(patsubst %/myapp,%,$(d))))))

.PHONY: setup demo test test-unit test-lab test-cli lint bench thorough clean-lab $(STAGES) $(ALERTS)

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "setting up $(VENV) (first run only; log in $(VENV)/install.log)"
	@$(PY) -m pip install --quiet --upgrade pip > $(VENV)/install.log 2>&1
	@$(PY) -m pip install --quiet -e '.[test,infra]' >> $(VENV)/install.log 2>&1 \
		|| { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

demo: $(STAMP)
	@$(RACELAB) matrix --track cron
	@$(RACELAB) matrix --track alerts

test: $(STAMP)
	@$(PY) -m pytest

# one group at a time: pure (no services), against the lab's services, through the CLI
test-unit test-lab test-cli: test-%: $(STAMP)
	@$(PY) -m pytest tests/$*

thorough: $(STAMP)
	@HYPOTHESIS_PROFILE=thorough $(PY) -m pytest tests/lab/test_properties.py

bench: $(STAMP)
	@$(RACELAB) bench

lint: $(STAMP)
	@$(VENV)/bin/ruff check harness tests [0-9][0-9]-*/ alerts

# static pattern rules: make skips implicit rules for .PHONY targets
$(STAGES): stage-%: $(STAMP)
	@$(RACELAB) matrix --stage $*

$(ALERTS): alerts-%: $(STAMP)
	@$(RACELAB) matrix --track alerts --stage alerts-$*

clean-lab: $(STAMP)
	@$(RACELAB) clean

diff-%: ; @a=$$(echo $* | cut -d- -f1); b=$$(echo $* | cut -d- -f2); \
	da=$$(ls -d 0$$a-*/ $$a-*/ 2>/dev/null | head -1); db=$$(ls -d 0$$b-*/ $$b-*/ 2>/dev/null | head -1); \
	if [ -z "$$da" ] || [ -z "$$db" ]; then \
	  echo "make diff-A-B: A and B are stage numbers, e.g. make diff-01-02; stages: $$(ls -d [0-9][0-9]-*/ | cut -c1-2 | tr '\n' ' ')" >&2; exit 2; fi; \
	diff -ru --exclude=__pycache__ $$da $$db || true
