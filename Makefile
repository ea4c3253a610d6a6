# Two commands: `make run` (set up, then start the app) and `make test` (set up, then the whole suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test bench setup browser

$(VENV)/.installed: requirements.txt requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt -r requirements-test.txt
	touch $@

setup: $(VENV)/.installed

run: setup
	$(VENV)/bin/streamlit run app.py

browser:
	@command -v chromium >/dev/null || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium)

test: setup browser
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n 2 --dist loadfile tests

bench: setup browser
	HF_HUB_OFFLINE=1 $(PY) -m bench --json bench.json
