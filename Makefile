# sim2real — the two commands a new user needs are `make demo` and `make test`.
# Every target that may start ROS 2 keeps DDS on loopback with its own domain id, and binds
# every DDS port to 127.0.0.1 with the Fast DDS profile config/fastdds_loopback.xml (unless
# FASTDDS_DEFAULT_PROFILES_FILE or the older FASTRTPS_DEFAULT_PROFILES_FILE is set: yours wins).

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= demo_out

export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_DOMAIN_ID ?= 57
ifeq ($(FASTDDS_DEFAULT_PROFILES_FILE)$(FASTRTPS_DEFAULT_PROFILES_FILE),)
export FASTDDS_DEFAULT_PROFILES_FILE := $(CURDIR)/config/fastdds_loopback.xml
endif
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: venv demo test lint bench clean browser

venv: $(STAMP)

# Runtime pins (requirements.txt) and the test, build and benchmark tools (requirements-dev.txt).
$(STAMP): requirements.txt requirements-dev.txt setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "sim2real needs Python 3.11 (the ROS 2 Kilted wheels are cp311 here); found " + sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m sim2real.physics.warmup
	touch $(STAMP)

# The demo's output directory is recreated on every run.
demo: venv
	rm -rf $(OUT)
	ROS_LOG_DIR=$$(mktemp -d) $(BIN)/sim2real demo --out $(OUT)

# Headless Chromium (Debian package) for the report's browser check; CI runs as root.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

# Test files that only compute (no ROS, no sockets, no subprocess timing, no Ray) run on two
# processes; every other file runs alone, one test at a time (ROS graphs, emulators on loopback
# ports, Ray, scheduling measurements). A new file runs alone until it is listed here.
PARALLEL_TESTS := $(sort $(wildcard tests/test_physics_*.py tests/test_sysid_*.py tests/test_engine_*.py tests/test_report_build.py \
	tests/test_report_fits.py tests/test_report_outcomes.py tests/test_report_robust.py tests/test_report_spread.py \
	tests/test_cli_fit.py tests/test_cli_fit_robust.py tests/test_cli_replay.py tests/test_cli_replay_robust.py \
	tests/test_cli_simulate.py tests/test_cli_simulate_distance.py tests/test_cli_simulate_hard_steps.py \
	tests/test_cli_import.py tests/test_cli_import_bag.py tests/test_cli_report.py tests/test_control_reference.py \
	tests/test_cli_compare_engines.py tests/test_cli_bad_input.py tests/test_cli_help.py tests/test_cli_sample_sweep.py \
	tests/test_file_modes.py tests/test_package.py tests/test_launch_files.py tests/test_servo.py \
	tests/test_control_pd.py tests/test_trials_scene.py tests/test_install.py \
	tests/test_experiment_table.py tests/test_model.py tests/test_params.py tests/test_spatial.py \
	tests/test_trial_gradients.py tests/test_trials_bag.py tests/test_trials_outcome.py))
SERIAL_TESTS := $(filter-out $(PARALLEL_TESTS),$(sort $(wildcard tests/test_*.py)))

# Both parts always run; the status is non-zero when either failed.
test: venv browser
	$(BIN)/ruff check sim2real tests benchmarks launch setup.py
	$(BIN)/python -m sim2real.physics.warmup
	ROS_LOG_DIR=$$(mktemp -d) $(BIN)/python -m pytest -q -n 2 --durations=10 $(PARALLEL_TESTS); a=$$?; \
	ROS_LOG_DIR=$$(mktemp -d) $(BIN)/python -m pytest -q --durations=25 $(SERIAL_TESTS); b=$$?; \
	echo "make test: computation tests exit $$a, the others exit $$b"; exit $$(( a || b ))

lint: venv
	$(BIN)/ruff check sim2real tests benchmarks launch setup.py

bench: venv
	@for b in benchmarks/*.py; do m=$$(basename $$b .py); [ "$$m" = "__init__" ] && continue; \
	  echo "# benchmarks.$$m" >&2; ROS_LOG_DIR=$$(mktemp -d) $(BIN)/python -m benchmarks.$$m --json || exit 1; done

clean:
	rm -rf build install log .pytest_cache .ruff_cache $(OUT)
