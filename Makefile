# Two commands: `make run` (set up, then start the app) and `make test` (set up, then ruff, the import
# contract and the suite, slow group aside). `make test-slow` runs the slow group, `make test-lower-isa` the numeric
# tests on kernels held to AVX2; CI runs all three.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# torch is installed first and on its own, so that a CPU build is taken: its pin is read from pyproject.toml,
# and TORCH_INDEX, when set, is a wheel index that serves CPU-only builds (PyTorch's CPU index or a mirror).
TORCH := $(shell sed -n 's/^ *"\(torch==[^"]*\)",*$$/\1/p' pyproject.toml)
TORCH_INDEX ?=
# the browser tests drive this Chromium (Debian's package by default; any Chromium or Chrome works)
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser || echo /usr/bin/chromium)
export CHROMIUM
TEST := HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n 2 --dist loadfile

.PHONY: run test test-lower-isa test-slow bench setup dev cluster notebook browser nginx postgres load lock

# The locks are installed with uv (pip installs only uv): the same pins, several times faster than pip on a slow
# machine. uv reads the wheel folders pip is configured with (PIP_FIND_LINKS, else pip's own configuration), where
# a CPU build of torch may lie. --compile-bytecode: pip compiles the installed modules and uv does not; without the
# .pyc files every fresh Python compiles torch's, transformers' and Streamlit's sources again (where
# PYTHONDONTWRITEBYTECODE is set, on every start: twice the import time, the app's first paint included).
UV_PIN := uv==0.13.9
FIND_LINKS := $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV = $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) $(foreach link,$(FIND_LINKS),--find-links $(link))

# rebuilt when pyproject.toml (the torch pin among the rest) or the lock file changes
$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(UV_PIN)"
	$(UV) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH)"
	$(UV) -r requirements.lock
	touch $@

setup: $(VENV)/.installed

# the test tools (pytest, playwright, ruff, import-linter, axe-playwright-python, pip-tools): requirements-dev.lock
# holds requirements.lock's pins and theirs; make run installs requirements.lock alone
$(VENV)/.dev: $(VENV)/.installed requirements-dev.lock
	$(UV) -r requirements-dev.lock
	touch $@

dev: $(VENV)/.dev

# the tests also run `python -m corpus_heads --ray`: the optional extra `cluster` (Ray), pinned in its own lock
# beside requirements.lock (same pins for everything both hold), so `make run` and the app never install it
$(VENV)/.cluster: $(VENV)/.installed requirements-cluster.lock
	$(UV) -r requirements-cluster.lock
	touch $@

cluster: $(VENV)/.cluster

# the slow group runs docs/notebooks/tour.ipynb (nbclient, ipykernel) and api.save draws .png/.svg (kaleido): the
# optional extra `notebook`, pinned in its own lock beside requirements.lock as `cluster` is; make run never installs it
$(VENV)/.notebook: $(VENV)/.installed requirements-notebook.lock
	$(UV) -r requirements-notebook.lock
	touch $@

notebook: $(VENV)/.notebook

run: setup  # two glibc arenas, as every hosted replica has (docs/DEPLOY.md): freed memory goes back to the system
	MALLOC_ARENA_MAX=2 $(VENV)/bin/streamlit run app.py

browser:
	@test -x "$(CHROMIUM)" || ( command -v apt-get >/dev/null \
		&& $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium ) \
		|| ( echo "No Chromium found: install one and run with CHROMIUM=/path/to/chromium" && exit 1 )

# the replica tests and the load test put nginx (Debian's package) in front of the app
nginx:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || ( command -v apt-get >/dev/null \
		&& $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nginx ) \
		|| ( echo "No nginx found: install it (e.g. apt-get install nginx)" && exit 1 )

# the class store's tests start a throwaway PostgreSQL server (Debian's package: initdb and pg_ctl)
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || ( command -v apt-get \
		>/dev/null && $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq postgresql ) \
		|| ( echo "No PostgreSQL found: install it (e.g. apt-get install postgresql)" && exit 1 )

test: dev cluster browser postgres
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(TEST) -m "not slow"

# The numeric tests again with the math libraries held to AVX2 (MKL's and ATen's own kernels; ignored on other
# architectures), so a test that passes on one kind of CPU only fails here, not on a user's machine. oneDNN is held
# to AVX2 too, but not below VNNI on a CPU that has it: torch picks oneDNN's int8 matrix product by the CPU's own
# VNNI flag, and oneDNN's AVX2 int8 kernels saturate (|torch._int_mm - exact| reached 43,899 here), a pairing no
# real CPU has.
ONEDNN_ISA := $(shell grep -qw avx512_vnni /proc/cpuinfo 2>/dev/null && echo AVX512_CORE_VNNI || echo AVX2)
LOWER_ISA := MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=$(ONEDNN_ISA) ATEN_CPU_CAPABILITY=avx2
test-lower-isa: dev cluster
	@$(LOWER_ISA) $(PY) -c "import torch; print('torch kernels held to', torch.backends.cpu.get_cpu_capability(), '; oneDNN to $(ONEDNN_ISA)')"
	$(LOWER_ISA) $(TEST) -m "not slow" tests/analysis tests/models tests/experiments

test-slow: dev cluster notebook browser nginx
	$(TEST) -m slow

# 30 simulated students on 1 and on 3 replicas behind nginx, hosted mode (bench/load.py); minutes
load: setup nginx
	HF_HUB_OFFLINE=1 $(PY) -m bench.load --students 30 --replicas 1 3 --json load.json

bench: dev cluster browser nginx
	HF_HUB_OFFLINE=1 $(PY) -m bench --json bench.json

# after changing a pin in pyproject.toml: write the locks again, requirements.lock (the app) first and the others
# with its pins (torch stays out: it is installed first)
lock: dev
	$(PY) -m piptools compile --quiet --unsafe-package torch --strip-extras --no-emit-index-url \
		--no-emit-find-links --no-header -o requirements.lock pyproject.toml
	$(PY) -m piptools compile --quiet --extra test --unsafe-package torch --strip-extras --no-emit-index-url \
		--no-emit-find-links --no-header -c requirements.lock -o requirements-dev.lock pyproject.toml
	$(PY) -m piptools compile --quiet --extra cluster --unsafe-package torch --strip-extras --no-emit-index-url \
		--no-emit-find-links --no-header -c requirements.lock -o requirements-cluster.lock pyproject.toml
	$(PY) -m piptools compile --quiet --extra notebook --unsafe-package torch --strip-extras --no-emit-index-url \
		--no-emit-find-links --no-header -c requirements.lock -o requirements-notebook.lock pyproject.toml
