# racelab: every target uses the project's own .venv, created on first use.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
RACELAB := $(VENV)/bin/racelab
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench thorough clean-lab synth \
        stage-00 stage-01 stage-02 stage-03 stage-04 stage-05 alerts-00 alerts-01

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
	@if [ -d alerts/00-in-memory-dedup ] && $(RACELAB) scenarios | grep -q ' alerts '; then \
		$(RACELAB) matrix --track alerts; fi

test: $(STAMP)
	@$(PY) -m pytest

thorough: $(STAMP)
	@HYPOTHESIS_PROFILE=thorough $(PY) -m pytest tests/test_properties.py

bench: $(STAMP)
	@$(RACELAB) bench

lint: $(STAMP)
	@$(VENV)/bin/ruff check harness tests [0-9][0-9]-*/ alerts

stage-%: $(STAMP)
	@$(RACELAB) matrix --stage $*

alerts-%: $(STAMP)
	@$(RACELAB) matrix --track alerts --stage alerts-$*

diff-%: ; @a=$$(echo $* | cut -d- -f1); b=$$(echo $* | cut -d- -f2); \
	diff -ru --exclude=__pycache__ $$(ls -d $$a-*/) $$(ls -d $$b-*/) || true
