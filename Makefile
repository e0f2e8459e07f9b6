# Two commands set everything up on a fresh machine: `make run` and `make test`.
# Both create the project venv (.venv) and install the project into it when needed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TRAIN_STAMP := $(VENV)/.installed-train
# The CPU build of torch that verl needs, taken before verl so nothing pulls a CUDA build of several GB.
TORCH := torch==2.13.0
export FACTORY_HOME ?= $(CURDIR)/.factory
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DAGSTER_HOME ?= $(FACTORY_HOME)/dagster
UI_HOST ?= 127.0.0.1
UI_PORT ?= 3000

.PHONY: install install-train system-deps run test bench ui lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# verl, Ray and the CPU build of torch: the training tests (and the Ray rollout backend) need them.
$(TRAIN_STAMP): $(STAMP)
	$(BIN)/pip install --quiet '$(TORCH)'
	$(BIN)/pip install --quiet -e '.[dev,train]'
	touch $(TRAIN_STAMP)

install: $(STAMP) system-deps

install-train: $(TRAIN_STAMP)

# Optional system tools: bubblewrap hardens the sandbox, chromium runs the UI test.
# Installed where apt is available and we are root; everything works (and says so) without them.
system-deps:
	@if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		missing=""; \
		command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
		command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
		if [ -n "$$missing" ]; then \
			echo "installing system packages:$$missing"; \
			(apt-get install -y -qq $$missing >/dev/null 2>&1 || \
			 (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $$missing >/dev/null 2>&1)) || \
			echo "note: could not install$$missing; the tests that need them say so"; \
		fi; \
	fi

run: $(STAMP)
	$(BIN)/factory run

test: install install-train
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

ui: $(STAMP)
	mkdir -p $(DAGSTER_HOME)
	test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -m assets.definitions -h $(UI_HOST) -p $(UI_PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(FACTORY_HOME)
