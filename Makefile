# Settee: two commands set up a fresh Debian 12 machine.
#   make demo   imports the example data and shows what the database holds
#   make test   runs the whole test suite
# Both install the Debian packages Settee needs when they are missing.

APT_PACKAGES := libmozjs-102-dev liblmdb-dev libicu-dev zlib1g-dev pkg-config
SWIFT ?= swift
DEMO_DB ?= demo-db
BENCH_DOCS ?= 1000000

.PHONY: deps build test warnings crash-test demo install uninstall bench bench-attachments bench-couchjs clean modules docs http-test bench-http bench-replication

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Builds everything, tests included, and fails on a compiler warning from the
# project's own sources (a fresh clone compiles every file: CI runs it first).
warnings: deps
	@mkdir -p .build
	@$(SWIFT) build --build-tests > .build/warnings.log 2>&1 || { cat .build/warnings.log; exit 1; }
	@grep -v "^\[" .build/warnings.log | tail -3
	@if grep -E "^$(CURDIR)/Sources/.*warning:" .build/warnings.log; then \
	  echo "warnings: the lines above are compiler warnings from Sources/"; exit 1; fi

# More rounds of the SIGKILL crash test than the suite runs (4 kills per round);
# SETTEE_CRASH_SEED=… replays a printed seed.
CRASH_ITERATIONS ?= 25
crash-test: deps
	$(SWIFT) build --build-tests
	SETTEE_CRASH_ITERATIONS=$(CRASH_ITERATIONS) $(SWIFT) test --skip-build --filter CrashSafetyTests

# A release build of `settee` into $(PREFIX)/bin (default /usr/local/bin):
# the command the README's tours and `settee serve` use. `make uninstall` removes it.
PREFIX ?= /usr/local
install: deps
	$(SWIFT) build -c release --product settee
	@SUDO=""; [ -w "$(PREFIX)" ] || [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	$$SUDO install -d "$(DESTDIR)$(PREFIX)/bin" && \
	$$SUDO install -m 755 "$$($(SWIFT) build -c release --show-bin-path)/settee" "$(DESTDIR)$(PREFIX)/bin/settee" && \
	echo "Installed $(DESTDIR)$(PREFIX)/bin/settee"

uninstall:
	@SUDO=""; [ -w "$(PREFIX)/bin" ] || [ "$$(id -u)" -eq 0 ] || SUDO="sudo"; \
	$$SUDO rm -f "$(DESTDIR)$(PREFIX)/bin/settee" && echo "Removed $(DESTDIR)$(PREFIX)/bin/settee"

demo: build
	@bash Scripts/demo.sh "$$($(SWIFT) build --show-bin-path)/settee" "$(DEMO_DB)"

bench: deps
	$(SWIFT) build -c release --product SetteeBenchmarks
	"$$($(SWIFT) build -c release --show-bin-path)/SetteeBenchmarks" --docs $(BENCH_DOCS)

# One attachment of ATTACHMENT_MB megabytes put from a file and got to a file: MB/s and peak memory.
ATTACHMENT_MB ?= 200
bench-attachments: deps
	$(SWIFT) build -c release --product SetteeBenchmarks
	"$$($(SWIFT) build -c release --show-bin-path)/SetteeBenchmarks" --attachments $(ATTACHMENT_MB)

clean:
	rm -rf .build "$(DEMO_DB)"

# `settee replicate` over REPLICATION_DOCS documents of ~1 KB: folder to folder,
# to and from `settee serve`; with COUCH_URL=http://adm:pass@host:5984, CouchDB's
# own replicator on the same documents in the same run, and the ratio.
REPLICATION_DOCS ?= 100000
bench-replication: deps
	$(SWIFT) build -c release --product settee
	DOCS=$(REPLICATION_DOCS) bash Scripts/bench-replication.sh "$$($(SWIFT) build -c release --show-bin-path)/settee" $(COUCH_URL)

# `settee couchjs` over its line protocol: map_doc and reduce rates, lock-step.
COUCHJS_BENCH_DOCS ?= 100000
bench-couchjs: deps
	$(SWIFT) build -c release --product settee
	$(SWIFT) build -c release --product SetteeCouchJSBenchmark
	"$$($(SWIFT) build -c release --show-bin-path)/SetteeCouchJSBenchmark" --docs $(COUCHJS_BENCH_DOCS)

# The targets and what each depends on (the layering SwiftPM enforces).
modules:
	@bash Scripts/module-graph.sh | sort

# The DocC documentation of the library and of the server, into
# .build/docs/Settee.doccarchive and SetteeServer.doccarchive; fails on any
# DocC warning or a public symbol that no article curates.
docs: deps
	SWIFT=$(SWIFT) bash Scripts/docs.sh

# CouchDB's own Mango suite (nose2) and a CouchDB client library from PyPI
# (aiocouch) against `settee serve`. Needs CouchDB 3.5.0's src/mango/test:
# MANGO_TESTS=DIR, or COUCHDB_REPO=a clone of apache/couchdb with tag 3.5.0.
http-test: deps
	$(SWIFT) build --product settee
	SETTEE="$$($(SWIFT) build --show-bin-path)/settee" bash Scripts/http-test.sh

# wrk against a release `settee serve` on loopback: document GET, view key
# lookup, _find by an indexed field, _bulk_docs of 1,000 documents.
BENCH_HTTP_DOCS ?= 100000
bench-http: deps
	@for p in wrk curl; do \
	  command -v $$p >/dev/null || { echo "Installing: $$p"; SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$p; }; \
	done
	$(SWIFT) build -c release --product settee
	BENCH_HTTP_DOCS=$(BENCH_HTTP_DOCS) bash Scripts/bench-http.sh "$$($(SWIFT) build -c release --show-bin-path)/settee"
