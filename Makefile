# Two entry points for a fresh machine (Python 3.11, make, the package registries):
#   make demo   create .venv, install everything, solve a seed instance
#   make test   create .venv, install everything, run the whole test suite
#   make docs   build the documentation site into site/ (offline)
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench docs notebooks clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "make: $(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 2; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,pandas,plots,dask,docs]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/laissez-opt validate instances/hotos25-table1.json
	$(BIN)/laissez-opt solve instances/hotos25-table1.json --method welfare --format table
	$(BIN)/laissez-opt solve instances/hotos25-table1.json --method welfare --solver ortools --format table

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n auto

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

notebooks: $(STAMP)
	$(BIN)/python docs/site/notebooks.py

bench: $(STAMP)
	$(BIN)/python benchmarks/welfare_scaling.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site .cache
