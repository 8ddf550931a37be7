# The two commands a new user runs: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_HOME := $(CURDIR)/.skillmill/demo
QUERY ?= sympy tests fail with pytest: command not found

.PHONY: run test lint schemas clean

$(BIN)/skillmill: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

## run: distill the sample sessions in samples/ into skills/ and recall from them (offline)
run: $(BIN)/skillmill
	@# a fresh demo home each time, but for Prefect's: the local server of the last run is reused while it idles
	@if [ -d $(DEMO_HOME) ]; then find $(DEMO_HOME) -mindepth 1 -maxdepth 1 ! -name prefect -exec rm -rf {} +; fi
	SKILLMILL_HOME=$(DEMO_HOME) $(BIN)/skillmill run samples --library skills
	@echo
	SKILLMILL_HOME=$(DEMO_HOME) $(BIN)/skillmill recall --include-candidates --limit 3 "$(QUERY)"
	@echo
	@echo "--- skills/_candidates/working-in-sympy/SKILL.md ---"
	@cat skills/_candidates/working-in-sympy/SKILL.md

## test: the import contracts (pyproject.toml [tool.importlinter]), then the whole suite;
## fails when a contract is broken, when a test fails or when no test ran
test: $(BIN)/skillmill
	$(BIN)/lint-imports --no-cache
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

lint: $(BIN)/skillmill
	$(BIN)/ruff check pipeline flows tests benchmarks

## schemas: regenerate schemas/ from the pydantic models
schemas: $(BIN)/skillmill
	$(BIN)/python -m pipeline.schemas

clean:
	rm -rf .skillmill .pytest_cache
