# Two commands on a fresh machine: `make figures` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PROFILE ?= quick
KERNEL := concurrency-lab

.PHONY: setup test test-stress test-browser figures lab live bench db lint format lock clean site reference card python-ft

setup: $(STAMP)

# A learner's set (make lab, make figures, make live): the lab's pinned packages, no developer tools, with
# pip's own progress. A Python too old, or one without venv, stops here with the way forward.
$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; v = sys.version.split()[0]; sys.exit(0 if sys.version_info >= (3, 11) else f"Concurrency Lab needs Python 3.11 or newer, and $(PYTHON) is {v}: install a newer one and run make PYTHON=python3.12 (for example), or create the conda environment in environment.yml")'
	@$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || { echo "Concurrency Lab needs Python's venv module, which $(PYTHON) lacks: on Debian or Ubuntu, sudo apt install python3-venv; or create the conda environment in environment.yml"; exit 1; }
	@echo "setup: the lab's packages into $(VENV), once (a few minutes; pip shows each package)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar on -c constraints.txt -e .
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (Concurrency Lab)" >/dev/null
	@touch $(STAMP)
	@echo "setup done: $(VENV) with kernel '$(KERNEL)'"

# The developer tools (pytest, ruff, mypy, ...), for make test and make lint only.
DEV_STAMP := $(VENV)/.dev-stamp
$(DEV_STAMP): $(STAMP) pyproject.toml constraints.txt
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(DEV_STAMP)

test: $(DEV_STAMP)
	$(PY) -m pytest

test-stress: $(DEV_STAMP)
	$(PY) -m pytest -m stress tests/harness/test_stress.py

# Lesson 01 (smoke profile) run in JupyterLab in a real browser (tests/browser/): Debian's Chromium,
# driven by Playwright (the `browser` extra, installed once, like setup). Playwright never downloads
# a browser of its own, so Chromium comes from apt: installed here as root, or named for the user.
CHROMIUM := /usr/bin/chromium
BROWSER_STAMP := $(VENV)/.browser-stamp
$(BROWSER_STAMP): $(DEV_STAMP) pyproject.toml constraints.txt
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,browser]'
	@touch $(BROWSER_STAMP)

$(CHROMIUM):
	@if [ "$$(id -u)" != 0 ]; then \
		echo "make test-browser needs Debian's Chromium at $(CHROMIUM); install it with: sudo apt-get install -y chromium"; \
		exit 1; \
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium \
		|| { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

test-browser: $(BROWSER_STAMP) $(CHROMIUM)
	$(PY) -m pytest -m browser tests/browser

# Lesson 10's free-threaded Python: found (LAB_FREETHREADED_PYTHON, python3.14t/3.13t on PATH, uv), else built
# once per machine from CPython's source into ~/.cache/concurrency-lab (LAB_CACHE_DIR), with the server's
# dependencies in a venv there. Without it, lesson 10 runs the GIL build alone and its claims say why.
python-ft: setup
	$(PY) -m labserver.course.python_ft

# figures and live make lesson 10's free-threaded Python first where it is missing (found in seconds
# once made); where it cannot be made, lesson 10 runs the GIL build alone and says why.
FT_OR_SAY = $(PY) -m labserver.course.python_ft || echo "$@: no free-threaded Python (above): lesson 10 runs the GIL build alone and says why"

REPEAT ?= 1
figures: setup
	@$(FT_OR_SAY)
	$(PY) -m labserver.course.batch --profile $(PROFILE) --repeat $(REPEAT)

# JupyterLab for this machine only, with token authentication on. That is Jupyter's default (a
# fresh random token, printed in the URL, never on the command line where `ps` shows it); it is
# spelled out so that it stays so: no inherited JUPYTER_TOKEN replaces the random one, and the
# server listens on 127.0.0.1 only. LAB_ARGS passes more options, e.g. LAB_ARGS=--no-browser.
# Jupyter will not start as root (a container's usual user) without --allow-root: as root, `make lab`
# adds it and says so. `id -u` is asked only when `lab` runs (these are `=` variables, not `:=`).
LAB_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)
LAB_ROOT_NOTE = make lab: running as root (id -u is 0), so it adds --allow-root; Jupyter refuses to start as root without it
LAB_DIR ?= notebooks/
lab: setup
	$(if $(LAB_ROOT),@echo '$(LAB_ROOT_NOTE)')
	env -u JUPYTER_TOKEN -u JUPYTER_TOKEN_FILE $(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 $(LAB_ROOT) $(LAB_DIR) $(LAB_ARGS)

# For an instructor in front of a class: the lessons with the `live` profile written in (every run
# cell about 20 s), in data/live/, opened in JupyterLab like `make lab`.
live: setup
	@$(FT_OR_SAY)
	$(PY) -m labserver.course.classroom --out data/live
	@$(MAKE) --no-print-directory lab LAB_DIR=data/live/

bench: setup
	$(PY) -m labserver.course.bench

# The executed lessons of the last batch (data/executed/) as a static site, data/site/_build/html/:
# Jupyter Book 1.x (the `site` extra, installed once, like setup), nothing run again, nothing fetched.
SITE_STAMP := $(VENV)/.site-stamp
$(SITE_STAMP): $(DEV_STAMP) pyproject.toml constraints.txt
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,site]'
	@touch $(SITE_STAMP)

SITE ?= data/site
site: $(SITE_STAMP)
	$(PY) -m labserver.course.site --out $(SITE)/book
	$(VENV)/bin/jupyter-book build --all --quiet $(SITE)/book --path-output $(SITE)
	$(PY) -m labserver.course.site --check $(SITE)/_build/html
	@echo "site: $(SITE)/_build/html/index.html"

# One figure per lesson from the last batch into docs/reference/ (committed: the README shows them),
# with the machine and date they come from in docs/reference/README.md.
reference: setup
	$(PY) -m labserver.course.reference

# The README's short card and decision card, written from labserver/course/card.py: each figure
# measured here is its range over the last BATCHES batches of `make figures` on disk (REPEAT=3 makes them).
BATCHES ?= 3
card: setup
	$(PY) -m labserver.course.card --batches $(BATCHES)

# Lesson 07's private PostgreSQL with the shop data (SCALE=1 is seed 001's size), until Ctrl-C.
SCALE ?= 0.01
db: setup
	$(PY) -m labserver.postgres --scale $(SCALE)

# mypy reads its settings, and the folder it checks, from pyproject.toml ([tool.mypy]).
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports && $(VENV)/bin/mypy

format: $(DEV_STAMP)
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

# Refresh constraints.txt from what is installed now (after changing a pin in pyproject.toml).
lock: $(DEV_STAMP)
	$(PY) -m pip freeze --exclude-editable | grep -v '^concurrency-lab' > constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
