# racelab: every target uses the project's own .venv, created on first use with the first
# Python 3.11+ on PATH (scripts/find-python; none: one line saying what to install, exit 2).
# The runs need only racelab itself (RUN_STAMP); the tests add pytest, hypothesis, ruff and
# stage 05's CDK (STAMP), about 430 MB more.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
RACELAB := $(VENV)/bin/racelab
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# Python's compiled bytecode is written (into __pycache__, which git ignores) even where
# PYTHONDONTWRITEBYTECODE is set, as on CI's machine: each racelab process the tests start would
# otherwise compile the harness from source again, about 0.15 s of CPU each. (Not a
# PYTHONPYCACHEPREFIX: that ignores the bytecode pip compiled at install, and a fresh clone's
# first `make test` compiled all of it again, 340 MB.) A lab process compiles the stage from its
# source regardless (harness.engine.inside.agent).
unexport PYTHONDONTWRITEBYTECODE

# stage-00 … stage-05 and alerts-00, alerts-01: one target per stage folder present
STAGES := $(foreach d,$(wildcard [0-9][0-9]-*/myapp),stage-$(word 1,$(subst -, ,$(d))))
ALERTS := $(foreach d,$(wildcard alerts/[0-9][0-9]-*/myapp),\
            alerts-$(word 1,$(subst -, ,$(notdir $(patsubst %/myapp,%,$(d))))))

.PHONY: help setup demo test test-slow test-unit test-lab test-cli lint bench perf-readme thorough clean-lab pictures preflight $(STAGES) $(ALERTS)
# plain `make` lists the targets; it installs nothing
.DEFAULT_GOAL := help

help:
	@echo "racelab: make TARGET"
	@echo "  demo                 install racelab alone (light) and print both tracks' matrices"
	@echo "  setup                install racelab with its test tools, stage 05's CDK and the peer libraries"
	@echo "  test                 the regression suite, one worker per core (about 8 minutes on 2 cores)"
	@echo "  test-slow            the long recomputations it leaves out: the README's matrices, the"
	@echo "                       property searches, weeks of ticks (CI runs test, then test-slow)"
	@echo "  test-unit, test-lab, test-cli   one group of tests"
	@echo "  thorough             the property tests with 2000 examples each, the 3-replica proofs"
	@echo "  lint                 ruff over the harness, tests, stages, tracks and examples"
	@echo "  bench, perf-readme   time the lab; rewrite the README's performance section"
	@echo "  pictures             redraw the stage READMEs' pictures from fresh runs"
	@echo "  clean-lab            remove what interrupted runs left behind"
	@echo "  stage-NN, alerts-NN  one stage's matrix row: $(strip $(STAGES) $(ALERTS))"
	@echo "  diff-AA-BB, diff-alerts-AA-BB   the code that changed between two stages, e.g. diff-02-03"
	@echo "  preflight            a workshop's morning: the services, one run in seconds, clean copies"
	@echo "  exercise-NN, check-exercise-NN, solve-exercise-NN, reset-exercise-NN"
	@echo "                       the workshop's exercises: $(strip $(EXERCISES))"

setup: $(STAMP)

# Expanded only when .venv is about to be created: no Python 3.11+ is one line, exit 2.
PYTHON = $(or $(shell $(SHELL) scripts/find-python 2>/dev/null),\
              $(error $(shell $(SHELL) scripts/find-python 2>&1)))

$(PY):
	@echo "creating $(VENV) with $(PYTHON) (first run only; log in $(VENV)/install.log)"
	@$(PYTHON) -m venv $(VENV) && $(PY) -m pip install --quiet --upgrade pip \
		> $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; rm -rf $(VENV); exit 1; }

$(RUN_STAMP): pyproject.toml | $(PY)
	@echo "installing racelab into $(VENV)"
	@$(PY) -m pip install --quiet -e . >> $(VENV)/install.log 2>&1 \
		|| { cat $(VENV)/install.log; exit 1; }
	@touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(PY)
	@echo "installing racelab with its test tools, stage 05's CDK and the peer libraries into $(VENV)"
	@$(PY) -m pip install --quiet -e '.[test,infra,peers]' >> $(VENV)/install.log 2>&1 \
		|| { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP) $(RUN_STAMP)

# both tracks' cells in one command's pool: the alerts cells fill the cores while the cron
# matrix's weeks end
demo: $(RUN_STAMP)
	@$(RACELAB) matrix --track cron --track alerts

# one worker per core; the tests that run `racelab clean` share one worker (--dist loadgroup);
# the tests marked slow (whole matrices, searches, weeks) are test-slow's
test: $(STAMP)
	@$(PY) -m pytest -n auto --dist loadgroup --durations=15 -m "not slow"

test-slow: $(STAMP)
	@$(PY) -m pytest -n auto --dist loadgroup --durations=15 -m slow

# one group at a time: pure (no services), against the lab's services, through the CLI
test-unit test-lab test-cli: test-%: $(STAMP)
	@$(PY) -m pytest tests/$*

thorough: $(STAMP)
	@HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -n auto tests/lab/test_properties.py \
	  tests/lab/test_explore.py tests/lab/test_explore_alerts.py

bench: $(RUN_STAMP)
	@$(RACELAB) bench

# the README's performance section, from a fresh bench (a couple of minutes)
perf-readme: $(STAMP)
	@$(RACELAB) bench --json > docs/bench.json
	@$(PY) scripts/perf_readme.py docs/bench.json README.md

lint: $(STAMP)
	@$(VENV)/bin/ruff check harness tests [0-9][0-9]-*/ alerts peers examples

# static pattern rules: make skips implicit rules for .PHONY targets
$(STAGES): stage-%: $(RUN_STAMP)
	@$(RACELAB) matrix --stage $*

$(ALERTS): alerts-%: $(RUN_STAMP)
	@$(RACELAB) matrix --track alerts --stage alerts-$*

clean-lab: $(RUN_STAMP)
	@$(RACELAB) clean

# --- workshop: code-only diffs between stages, and exercises that check themselves ------------
# diff-AA-BB (cron track) and diff-alerts-AA-BB show code only: no READMEs, pictures, or the
# synthesised infra/template.json (its source, infra/stack.py, is shown). -N: a file new in the
# later stage is shown whole (03's runs.py holds the INSERT … ON CONFLICT).
DIFF_CODE := diff -ruN --exclude=__pycache__ --exclude=README.md --exclude='*.svg' \
	--exclude='*.json' --exclude=.racelab-from
EXERCISES := $(foreach d,$(wildcard exercises/[0-9][0-9]-*/check.toml),\
               $(word 1,$(subst -, ,$(notdir $(patsubst %/check.toml,%,$(d))))))
.PHONY: $(addprefix exercise-,$(EXERCISES)) $(addprefix check-exercise-,$(EXERCISES)) \
	$(addprefix reset-exercise-,$(EXERCISES)) $(addprefix solve-exercise-,$(EXERCISES))

diff-alerts-%: ; @a=$$(echo $* | cut -d- -f1); b=$$(echo $* | cut -d- -f2); \
	$(DIFF_CODE) $$(ls -d alerts/$$a-*/) $$(ls -d alerts/$$b-*/) || true

diff-%: ; @a=$$(echo $* | cut -d- -f1); b=$$(echo $* | cut -d- -f2); \
	da=$$(ls -d 0$$a-*/ $$a-*/ 2>/dev/null | head -1); db=$$(ls -d 0$$b-*/ $$b-*/ 2>/dev/null | head -1); \
	if [ -z "$$da" ] || [ -z "$$db" ]; then \
	  echo "make diff-A-B: A and B are stage numbers, e.g. make diff-01-02; stages: $$(ls -d [0-9][0-9]-*/ | cut -c1-2 | tr '\n' ' ')" >&2; exit 2; fi; \
	$(DIFF_CODE) $$da $$db || true

# the morning of a workshop: the services answer, one run comes back within seconds, and no
# exercise copy holds yesterday's edits (exit 1 and what to do when one check fails)
preflight: $(RUN_STAMP)
	@$(PY) -m harness.exercises preflight

# exercise-NN copies the starting stage to exercises/scratch/ (edits there are kept);
# check- runs the exercise's scenarios on that copy; reset- starts over; solve- applies the patch
$(addprefix exercise-,$(EXERCISES)): exercise-%: $(RUN_STAMP)
	@$(PY) -m harness.exercises start $*
# "not yet" (exit 1) is an outcome of the exercise, not make's error; SHOW=1: what it wants
$(addprefix check-exercise-,$(EXERCISES)): check-exercise-%: $(RUN_STAMP)
	@$(PY) -m harness.exercises check $* $(if $(SHOW),--show) || [ $$? -eq 1 ]
$(addprefix reset-exercise-,$(EXERCISES)): reset-exercise-%: $(RUN_STAMP)
	@$(PY) -m harness.exercises reset $*
$(addprefix solve-exercise-,$(EXERCISES)): solve-exercise-%: $(RUN_STAMP)
	@$(PY) -m harness.exercises solve $*

# the pictures the stage READMEs show (docs/pictures/), redrawn from fresh runs
pictures: $(STAMP)
	@$(PY) -m harness.stage_pictures
