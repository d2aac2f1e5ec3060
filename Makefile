# The two commands of the README:
#   make report   - the main job: every notebook over every bundle in sample_data/, HTML in reports/
#   make test     - the whole test suite: `make check`, then the real-broker, Chromium and slow tests
#                   and every notebook under nbval
# Each creates or reuses the local virtualenv .venv by itself.
#   make check    - the fast lane: ruff, mypy, the import contracts (lint-imports, pyproject.toml),
#                   doctests and the tests that need neither a broker nor Chromium (under a minute)

PYTHON ?= python3

# Bytecode caches stay on for everything make runs, even where the environment turns them off:
# without them every Python process recompiles pandas and Jupyter from source (about a second
# each) and pytest rewrites every test module again on each worker.
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
OUT    ?= reports

FAST   := -p no:nbval -m "not broker and not chromium and not slow"
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider

.PHONY: report test check venv chromium bench notebooks statements patterns clean

report: $(STAMP)
	$(BIN)/kitlib report sample_data --out $(OUT)

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo --no-cache
	@# the type check runs beside the fast tests (it is one process; the tests take both cores)
	@$(BIN)/mypy > .mypy-check.log 2>&1 & mypy=$$!; \
	 $(PYTEST) -n 2 --dist loadfile $(FAST) --doctest-modules kitlib tests; tests=$$?; \
	 wait $$mypy; typed=$$?; cat .mypy-check.log; rm -f .mypy-check.log; \
	 test $$tests -eq 0 -a $$typed -eq 0

test: check chromium
	$(PYTEST) -m broker tests
	$(PYTEST) -n 2 --dist loadfile -m "(chromium or slow) and not broker" tests
	$(PYTEST) -n 2 --dist loadfile notebooks --nbval --nbval-sanitize-with tests/nbval-sanitize.cfg

venv: $(STAMP)

# setup.py builds the compiled log4j scan, template matcher, literal prefilter, cuts and secret pre-check; a change to their C source reinstalls (and rebuilds) the kit
$(STAMP): pyproject.toml setup.py kitlib/formats/logs/_scan.c kitlib/formats/logs/_match.c kitlib/formats/logs/_prefilter.c kitlib/extract/_cut.c kitlib/redact/_precheck.c kitlib/redact/_precheck.h
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 || true
	@if [ -x $(BIN)/uv ]; then $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python --reinstall-package kafka-incident-kit -e '.[test]'; \
	 else $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'; fi
	@touch $(STAMP)

# Reports are checked in Debian's chromium. Install it when missing and we may (root + apt).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the report render tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "could not install chromium: the render tests will fail"; \
	  else echo "chromium not found: install Debian's 'chromium' package for the render tests"; fi; }

# Re-execute every notebook in place on its default (sample) bundle, refreshing the stored
# outputs that nbval compares against. Run after changing kitlib, a notebook or sample data.
notebooks: $(STAMP)
	cd notebooks && for nb in *.ipynb; do ../$(BIN)/papermill -k python3 --cwd . "$$nb" "$$nb" || exit 1; done

# The catalogue of Kafka's own log statements that ships with the kit, read from a git clone of
# Apache Kafka (every release tag and the clone's HEAD; nothing is checked out) and from the
# released jars (class files) of KAFKA_JARS, the releases the clone does not reach. The jars are
# read from Maven's local repository (MAVEN_REPO); `mvn dependency:get` puts any missing ones
# there first (the only step that goes to the network). Never edit the file.
#   make statements KAFKA_CLONE=path/to/kafka [KAFKA_JARS="4.0.0 4.1.0"] [MAVEN_REPO=~/.m2/repository]
KAFKA_JARS ?= 4.0.0 4.1.0 4.2.0 4.3.0 4.4.0
MAVEN_REPO ?= $(HOME)/.m2/repository
KAFKA_ARTIFACTS = kafka-clients kafka_2.13 kafka-server kafka-server-common kafka-metadata kafka-raft kafka-storage \
  kafka-storage-api kafka-group-coordinator kafka-group-coordinator-api kafka-coordinator-common \
  kafka-share-coordinator kafka-transaction-coordinator connect-runtime connect-api connect-json \
  connect-transforms kafka-streams
statements: $(STAMP)
	@test -n "$(KAFKA_CLONE)" || { echo "usage: make statements KAFKA_CLONE=DIR [KAFKA_JARS=\"4.0.0 ...\"] (a git clone of apache/kafka)"; exit 2; }
	@for v in $(KAFKA_JARS); do for a in $(KAFKA_ARTIFACTS); do \
	  test -s "$(MAVEN_REPO)/org/apache/kafka/$$a/$$v/$$a-$$v.jar" || \
	    mvn -q -B dependency:get -Dmaven.repo.local="$(MAVEN_REPO)" -Dartifact=org.apache.kafka:$$a:$$v -Dtransitive=false \
	      || echo "no $$a $$v: read without it"; done; done
	$(BIN)/python -m kitlib.formats.logs.statements $(KAFKA_CLONE) --out kitlib/formats/logs/statements.json.gz \
	  --maven-repo "$(MAVEN_REPO)" $(foreach v,$(KAFKA_JARS),--jars $(v))
	$(MAKE) patterns

# The catalogue compiled for matching, shipped beside it so that no first run compiles it (about a
# second). Run after changing the catalogue or kitlib/formats/logs/compiled.py or lineage.py; a
# test says when it is out of date.
patterns: $(STAMP)
	$(BIN)/python -m kitlib.formats.logs.compiled

bench: $(STAMP)
	$(BIN)/python bench/ingest_bench.py --size-mb 1024

clean:
	rm -rf $(VENV) $(OUT)
