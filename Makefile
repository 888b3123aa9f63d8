# Feedback Lab: `make demo` runs the app on this machine, `make test` runs the whole suite.
PYTHON ?= python3
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PYTHONUNBUFFERED := 1

.PHONY: demo test test-fast install chromium lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch first, pinned, with pip (which takes the local build), so nothing pulls a CUDA build.
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	# The rest with uv (seconds instead of minutes); plain pip when uv cannot be had. Bytecode compiled at install
	# (pip does it by default, uv on request): every later command starts ~1.5 s sooner.
	($(PY) -m pip install --quiet --disable-pip-version-check uv && \
	  $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) -e ".[test]") || \
	  $(PY) -m pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

# Demo: SQLite, embedded Redis, offline models, served as production is (DEBUG off: the styled error pages, static
# files collected and served by whitenoise) on 127.0.0.1 only, with a secret key generated once into var/
# (FEEDBACK_LAB_DEMO, docs/operations/configuration.md). `make demo PORT=8123` serves it on another port.
DEMO_ENV := FEEDBACK_LAB_DEMO=1 DEBUG=0
demo: install
	$(DEMO_ENV) $(PY) manage.py migrate --no-input
	$(DEMO_ENV) $(PY) manage.py collectstatic --no-input --verbosity 0
	$(DEMO_ENV) $(PY) manage.py demo_setup
	$(DEMO_ENV) $(PY) manage.py run_demo --port $(PORT)

chromium:
	@command -v chromium >/dev/null 2>&1 || test -x /usr/bin/chromium || \
		(echo "Installing Debian chromium for the browser tests"; \
		 (apt-get update -qq || sudo apt-get update -qq) && \
		 (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium || sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium))

# The full suite. DATABASE_URL / REDIS_URL select PostgreSQL and Redis; without them SQLite and embedded Redis.
test: install chromium
	$(PY) -m pytest

test-fast: install
	$(PY) -m pytest -m "not browser and not e2e"

# Static checks, as CI runs them: ruff, then mypy (files and strictness come from pyproject.toml, so a bare
# `DEBUG=1 mypy` agrees; DEBUG only lets the Django plugin load the settings without a SECRET_KEY), then the import
# contracts once pyproject.toml declares them.
lint: install
	$(VENV)/bin/ruff check annotate evaluation models_runtime tests benchmarks
	DEBUG=1 $(VENV)/bin/mypy
	if grep -q '^\[tool.importlinter\]' pyproject.toml; then $(VENV)/bin/lint-imports; fi

clean:
	rm -rf var .pytest_cache
