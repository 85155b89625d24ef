#!/usr/bin/env bash
# `make http-test`: clients that Settee did not write drive `settee serve`.
#
#  1. CouchDB 3.5.0's own Mango suite (src/mango/test/*.py, run with nose2 as
#     CouchDB runs it). Its tests are not in this repository: set MANGO_TESTS to
#     a folder holding them (CouchDB's src/mango/test), or COUCHDB_REPO to a git
#     clone of apache/couchdb that has the tag 3.5.0. A failure fails the run
#     unless Scripts/mango-known-failures.txt lists the test, with its reason.
#  2. Scripts/http-client-scenario.py: a maintained CouchDB client from PyPI
#     (aiocouch) creates a database, writes in bulk, queries a view, finds,
#     reads the changes feed and puts and gets an attachment.
#
# Python packages come from PyPI into a virtual environment under .build/.
# Environment: SETTEE (a built settee binary; otherwise `swift build` makes
# one), MANGO_TESTS, COUCHDB_REPO, MANGO_OPTIONAL=1 (without the Mango tests,
# say so and run the client scenario alone, as CI does on a machine without them), KEEP_MANGO_LOG (a file for nose2's log), MANGO_FILTER (nose2 test names to run, e.g.
# 03-operator-test), KEEP_SERVER_LOG (a file for the server's log).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
SWIFT="${SWIFT:-swift}"
COUCHDB_REPO="${COUCHDB_REPO:-}"
known_failures="$root/Scripts/mango-known-failures.txt"
venv="$root/.build/http-test-venv"
work="$(mktemp -d "${TMPDIR:-/tmp}/settee-http-test.XXXXXX")"
server_pid=""

cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [ -n "${KEEP_SERVER_LOG:-}" ] && [ -f "$work/server.log" ]; then cp "$work/server.log" "$KEEP_SERVER_LOG"; fi
    if [ -n "${KEEP_MANGO_LOG:-}" ] && [ -f "$work/mango.log" ]; then cp "$work/mango.log" "$KEEP_MANGO_LOG"; fi
    rm -rf "$work"
}
trap cleanup EXIT

# --- the Mango tests -------------------------------------------------------
mango="$work/mango"
mkdir -p "$mango/test"
run_mango=1
if [ -n "${MANGO_TESTS:-}" ]; then
    if ! ls "$MANGO_TESTS"/mango.py >/dev/null 2>&1; then
        echo "http-test: MANGO_TESTS=$MANGO_TESTS holds no mango.py: point it at CouchDB 3.5.0's src/mango/test" >&2
        exit 2
    fi
    cp "$MANGO_TESTS"/*.py "$mango/test/"
elif [ -n "$COUCHDB_REPO" ] && git -C "$COUCHDB_REPO" rev-parse -q --verify "3.5.0^{commit}" >/dev/null 2>&1; then
    for f in $(git -C "$COUCHDB_REPO" ls-tree --name-only 3.5.0 src/mango/test/); do
        git -C "$COUCHDB_REPO" show "3.5.0:$f" >"$mango/test/$(basename "$f")"
    done
elif [ -n "${MANGO_OPTIONAL:-}" ]; then
    echo "http-test: CouchDB's Mango tests not given (MANGO_TESTS or COUCHDB_REPO): the client scenario runs alone"
    run_mango=0
else
    cat >&2 <<EOF
http-test: CouchDB's Mango test suite is not on this machine.
  It is not part of this repository (Apache CouchDB's code). Provide it by either
    MANGO_TESTS=/path/to/couchdb/src/mango/test make http-test
  (a checkout of apache/couchdb at tag 3.5.0), or
    COUCHDB_REPO=/path/to/couchdb-clone make http-test
  (a git clone of apache/couchdb that has the tag 3.5.0).
EOF
    exit 2
fi
# nose2's configuration, as CouchDB's src/mango/unittest.cfg has it.
printf '[unittest]\nstart-dir=test\ntest-file-pattern=[0-9]*.py\n' >"$mango/unittest.cfg"

# --- Python and its packages (PyPI) -----------------------------------------
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "Installing: python3-venv"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv
fi
requirements="nose2==0.13.0 requests==2.27.1 hypothesis==6.31.6 aiocouch==4.0.1"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$requirements" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check $requirements
    echo "$requirements" >"$venv/.requirements"
fi

# --- the server -------------------------------------------------------------
if [ -z "${SETTEE:-}" ]; then
    "$SWIFT" build --product settee
    SETTEE="$("$SWIFT" build --show-bin-path)/settee"
fi
# Up to 120 s: storing the administrator hashes its password 600,000 times (PBKDF2), slow in a debug build on a busy machine.
"$SETTEE" serve --data "$work/data" --port 0 --admin adm:pass >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
port=""
for _ in $(seq 1 1200); do
    port="$(sed -n 's|.*"listening":"http://[^:]*:\([0-9]*\)/".*|\1|p' "$work/server.out" | head -1)"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "http-test: settee serve did not start" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { echo "http-test: settee serve printed no port" >&2; exit 1; }
export COUCH_HOST="http://127.0.0.1:$port" COUCH_USER=adm COUCH_PASS=pass
echo "settee serve on $COUCH_HOST"

# --- 1. Mango -------------------------------------------------------------------
mango_status=0
if [ "$run_mango" -eq 1 ]; then
set +e
(cd "$mango" && "$venv/bin/python" -m nose2 -v ${MANGO_FILTER:-}) >"$work/mango.log" 2>&1
"$venv/bin/python" - "$work/mango.log" "$known_failures" <<'EOF'
import re, sys
log, known_path = sys.argv[1], sys.argv[2]
known = {}
for line in open(known_path, encoding="utf-8"):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    name, _, reason = line.partition(" ")
    known[name] = reason.strip()
# nose2 -v: "test_name (module.Class.test_name) ... ok|FAIL|ERROR|skipped …"
# (or "(module.Class)" on older Pythons).
pattern = re.compile(r"^(\w+) \(([\w.-]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)", re.M)
results = {}
text = open(log, encoding="utf-8", errors="replace").read()
for match in pattern.finditer(text):
    test, where, outcome = match.groups()
    name = where if where.endswith("." + test) else where + "." + test
    results[name] = outcome
passed = sorted(n for n, o in results.items() if o in ("ok", "expected failure"))
failed = sorted(n for n, o in results.items() if o in ("FAIL", "ERROR", "unexpected success"))
skipped = sorted(n for n, o in results.items() if o == "skipped")
unexpected = [n for n in failed if n not in known]
fixed = sorted(n for n in known if results.get(n) == "ok")
if not results:
    print(text[-3000:])
    print("http-test: no Mango test ran")
    sys.exit(1)
for name in unexpected:
    print(f"UNEXPECTED FAILURE: {name}")
for name in fixed:
    print(f"now passes (remove it from Scripts/mango-known-failures.txt): {name}")
if unexpected:
    # nose2's report of each unexpected failure.
    for block in re.split(r"\n={70}\n", text):
        header = block.split("\n", 1)[0]
        if any(f"({name})" in header for name in unexpected):
            print("=" * 70)
            print(block[:4000])
# Not in the "N passed, N failed" form: the known failures are listed, not a red run.
print(f"CouchDB's Mango suite: {len(passed)} tests passed; {len(failed) - len(unexpected)} known failures "
      f"(Scripts/mango-known-failures.txt), {len(unexpected)} unexpected; {len(skipped)} skipped (text indexes)")
sys.exit(1 if unexpected else 0)
EOF
mango_status=$?
set -e
fi

# --- 2. A CouchDB client library from PyPI ------------------------------------
set +e
"$venv/bin/python" "$root/Scripts/http-client-scenario.py"
scenario_status=$?
set -e

if [ "$mango_status" -ne 0 ] || [ "$scenario_status" -ne 0 ]; then
    echo "http-test: FAILED (mango: $mango_status, client scenario: $scenario_status)"
    exit 1
fi
echo "http-test: OK"
