# make demo / make test on a fresh clone: both create or reuse .venv and install what they need.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
# What is installed is the locked versions the suite passes with (requirements.lock, written by
# uv from both pyproject.toml files' ranges; the test tools' environments, tests/*.lock): a fresh
# clone installs what was tested, not whatever PyPI has newest that day. `make lock` moves the
# locks to the newest releases and runs the suite on them.
CHECKOV_VERSION := 3.3.30
OLD_PYTHON_TOOLS := pytest jsonschema pyyaml opentelemetry-proto
LOCKS := requirements.lock tests/requirements-checkov.lock tests/requirements-old-python.lock
# Reinstall only when the dependency list or a lock changes; an existing .venv is reused.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml agent/pyproject.toml $(LOCKS) | cksum | cut -d' ' -f1)

# aws-cdk-lib runs on Node; Node 20 works but is past its end of life for jsii, which would
# print a banner on every synth.
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install demo demo-otel test test-old-python bench lint typecheck clean prometheus lock

# checkov pins boto3==1.35.49 (so botocore 1.35) and packaging<24, older than the project's:
# it gets its own environment (tests/requirements-checkov.lock), and tests/infra/test_checkov.py
# runs it from there.
CHECKOV := $(VENV)/checkov/bin/checkov

install: $(STAMP) $(CHECKOV)

# uv installs the environments from the same PyPI packages as pip, in a fraction of its time
# (a fresh clone's `make test` has a 15-minute budget; pip took about three of them).
UV := $(BIN)/uv
UV_VERSION := 0.13.9
$(UV):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)

$(CHECKOV): tests/requirements-checkov.lock | $(UV)
	@test -x $(VENV)/checkov/bin/python || $(PYTHON) -m venv $(VENV)/checkov
	$(UV) pip install --quiet --python $(VENV)/checkov/bin/python -r tests/requirements-checkov.lock
	@touch $@

$(STAMP): pyproject.toml agent/pyproject.toml $(LOCKS) | $(UV)
	$(UV) pip install --quiet --python $(BIN)/python -r requirements.lock \
		-e './agent[exporter,otlp]' -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# The newest releases: re-resolve every lock (within the pyproject.toml files' ranges), install
# them and run the suite. Commit the locks when it passes; where it fails, fix the project for
# the newer release, or hold it back in pyproject.toml with the reason.
UV_COMPILE = $(UV) pip compile --quiet --upgrade --no-header
lock: | $(UV)
	$(UV_COMPILE) pyproject.toml agent/pyproject.toml --all-extras --python-version 3.11 \
		-o requirements.lock
	echo checkov==$(CHECKOV_VERSION) | $(UV_COMPILE) - --python-version 3.11 \
		-o tests/requirements-checkov.lock
	printf '%s\n' $(OLD_PYTHON_TOOLS) | $(UV_COMPILE) - --python-version 3.9 \
		-o tests/requirements-old-python.lock
	$(MAKE) test

# The demo needs the project and moto, not the test tools' own environments (checkov).
demo: $(STAMP)
	$(BIN)/gpu-insights demo --out out --cdk-out cdk.out

# The same demo in OTel Container Insights mode, compared with a Classic run: it needs
# Prometheus (`make prometheus`, Debian's package) and says so in one line without it.
demo-otel: $(STAMP)
	$(BIN)/gpu-insights demo --mode otel --out out --cdk-out cdk.out

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# The policy tests run AWS's evaluation logic on Node (@cloud-copilot/iam-simulate): installed
# from the lock file when node_modules is missing or the lock changed.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# The PromQL engine the OTel reader's tests query (tests/prometheus.py); they skip without it.
prometheus:
	@command -v prometheus >/dev/null || (apt-get update -q && apt-get install -y -q --no-install-recommends prometheus) \
		|| echo "Prometheus could not be installed: the PromQL engine tests will be skipped"

# The suite on every core (pytest-xdist). --dist loadscope keeps each module on one worker, so
# a module-scoped fixture (the demo's run, a backtest, a synthesized app) is built once.
PYTEST_WORKERS ?= auto
# --durations=25 prints the slowest tests, so the suite's time budget stays in view.
test: lint typecheck node_modules/.package-lock.json
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope --durations=25
	$(MAKE) test-old-python

# The training emitter runs in training images on Python 3.9+, and the serving quality proxy in
# serving images: vermin checks their modules in the suite (tests/unit/agent/test_agent_install.py);
# here agent/ is installed alone (not editable, no dependencies) into an older interpreter and
# the emitter's, the quality proxy's and their OTLP encoding's tests run against that install:
# the first 3.9 or 3.10 that runs (on PATH, or pyenv's; uv and Debian's archive offer none
# offline).
OLD_PYTHON ?= $(shell for p in python3.9 $(wildcard $(HOME)/.pyenv/versions/3.9*/bin/python3.9) \
	python3.10 $(wildcard $(HOME)/.pyenv/versions/3.10*/bin/python3.10); do \
	$$p -c 'import sys; print(sys.executable)' 2>/dev/null && break; done)
test-old-python: | $(UV)
	@if [ -z "$(OLD_PYTHON)" ]; then \
		echo "no Python 3.9 or 3.10 on this machine: emitter tests ran on $$($(PYTHON) -V) only"; \
	else \
		$(OLD_PYTHON) -m venv $(VENV)/old-python && \
		$(UV) pip install --quiet --python $(VENV)/old-python/bin/python --reinstall --no-deps ./agent && \
		$(UV) pip install --quiet --python $(VENV)/old-python/bin/python -r tests/requirements-old-python.lock && \
		$(VENV)/old-python/bin/python -c 'import gpu_insights_agent.emitter.training as m; \
			import gpu_insights_agent.quality.recorder as q; \
			assert "site-packages" in m.__file__ and "site-packages" in q.__file__, m.__file__' && \
		$(VENV)/old-python/bin/python -m pytest -q -p no:cacheprovider tests/unit/agent/emitter/test_training.py \
			tests/unit/agent/quality tests/unit/agent/otlp/test_json_encoding.py; \
	fi

bench: install
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf cdk.out out .pytest_cache .mypy_cache .ruff_cache
