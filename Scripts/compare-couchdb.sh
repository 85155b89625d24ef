#!/usr/bin/env bash
# Settee and Apache CouchDB side by side on the same documents, both with
# Basic authentication as adm:pass: the time to build one view over
# DOCS documents (the first query), then wrk (2 threads, 32 connections,
# 10 s) on random document GETs and view key lookups.
# Usage: Scripts/compare-couchdb.sh SETTEE_BINARY [COUCHDB_URL]
#   COUCHDB_URL defaults to http://adm:pass@127.0.0.1:5984 (a running CouchDB
#   with that administrator); settee serve runs on port 25986. Needs wrk, curl, bc.
set -euo pipefail
settee="$1"
C="${2:-http://adm:pass@127.0.0.1:5984}"
couch_host="${C#*@}"
docs="${DOCS:-100000}"
work=$(mktemp -d)
awk -v n="$docs" 'BEGIN { for (i = 0; i < n; i++) printf "{\"_id\":\"doc-%06d\",\"n\":%d,\"group\":\"g%d\",\"text\":\"document number %d\"}\n", i, i, i % 100, i }' > "$work/docs.ndjson"
mkdir -p "$work/data"
"$settee" --db "$work/data/side" import "$work/docs.ndjson" > /dev/null
"$settee" serve --data "$work/data" --port 25986 --admin adm:pass > /dev/null 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null; rm -rf "$work"' EXIT
S=http://adm:pass@127.0.0.1:25986
curl -s -X DELETE $C/side > /dev/null || true
curl -s -X PUT $C/side > /dev/null
split -l 10000 "$work/docs.ndjson" "$work/part-"
for part in "$work"/part-*; do
  { printf '{"docs":['; paste -sd, "$part"; printf ']}'; } > "$part.json"
  curl -s -X POST $C/side/_bulk_docs -H 'Content-Type: application/json' --data-binary @"$part.json" > /dev/null
done
sleep 1
design='{"views":{"by_n":{"map":"function (doc) { if (typeof doc.n === \"number\") emit(doc.n, doc.group); }"}}}'
for target in "$C" "$S"; do
  curl -s -X PUT "$target/side/_design/b" -H 'Content-Type: application/json' -d "$design" > /dev/null
  start=$(date +%s.%N)
  curl -s "$target/side/_design/b/_view/by_n?key=1" > /dev/null
  end=$(date +%s.%N)
  echo "view build of $docs documents at ${target#*@}: $(echo "$end - $start" | bc) s"
done
cat > "$work/get.lua" <<EOF
math.randomseed(os.time())
request = function() return wrk.format("GET", string.format("/side/doc-%06d", math.random(0, $docs - 1))) end
EOF
cat > "$work/view.lua" <<EOF
math.randomseed(os.time() + 1)
request = function() return wrk.format("GET", "/side/_design/b/_view/by_n?key=" .. math.random(0, $docs - 1)) end
EOF
auth=$(printf 'adm:pass' | base64)
for script in get view; do
  couch_rate=$(wrk -t2 -c32 -d10s -H "Authorization: Basic $auth" -s "$work/$script.lua" "http://$couch_host/" | awk '/^Requests\/sec:/ { print $2 }')
  settee_rate=$(wrk -t2 -c32 -d10s -H "Authorization: Basic $auth" -s "$work/$script.lua" http://127.0.0.1:25986/ | awk '/^Requests\/sec:/ { print $2 }')
  echo "$script: CouchDB $couch_rate requests/s, Settee $settee_rate requests/s"
done
curl -s -X DELETE $C/side > /dev/null
