#!/usr/bin/env bash
# Replication speed: DOCS documents of ~1 KB carried by `settee replicate`
# from one Settee database to another — folder to folder, and folder to a
# `settee serve` database over HTTP — with docs/s and peak memory; with a
# CouchDB URL, CouchDB's own replicator between two databases of that
# CouchDB on the same documents, measured in the same run, and the ratio.
# Usage: Scripts/bench-replication.sh SETTEE_BINARY [COUCHDB_URL]
#   COUCHDB_URL: e.g. http://adm:pass@127.0.0.1:5984 (an administrator's).
#   settee serve runs on port 25987. Needs curl, bc and GNU time.
set -euo pipefail
settee="$1"
C="${2:-}"
docs="${DOCS:-100000}"
work=$(mktemp -d)
spid=""
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$work"' EXIT
# ~1 KB each: a few fields and 900 bytes of text.
awk -v n="$docs" 'BEGIN { pad = ""; for (j = 0; j < 90; j++) pad = pad "lorem ipsu";
  for (i = 0; i < n; i++) printf "{\"_id\":\"doc-%07d\",\"n\":%d,\"group\":\"g%d\",\"price\":%d.25,\"text\":\"%s\"}\n", i, i, i % 100, i % 1000, pad }' \
  > "$work/docs.ndjson"
"$settee" --db "$work/source" import "$work/docs.ndjson" > /dev/null

# Runs a command under GNU time; prints "SECONDS PEAK_KB".
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$work/out" 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
  cat "$work/time"
}
report() {  # label seconds peak_kb
  rate=$(echo "$docs / $2" | bc)
  printf '%-52s %8.2f s %9d docs/s  peak %4d MB\n' "$1" "$2" "$rate" "$(( $3 / 1024 ))"
}

read -r secs peak < <(measure "$settee" replicate "$work/source" "$work/copy")
report "settee replicate, folder -> folder" "$secs" "$peak"
settee_rate=$(echo "$docs / $secs" | bc)
read -r secs peak < <(measure "$settee" replicate "$work/source" "$work/copy")
printf '%-52s %8.2f s (nothing to carry)\n' "  the same again, from the checkpoint" "$secs"

mkdir -p "$work/data"
"$settee" serve --data "$work/data" --port 25987 --admin adm:pass > /dev/null 2>&1 &
spid=$!
for _ in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:25987/ && break; sleep 0.1; done
read -r secs peak < <(measure "$settee" replicate "$work/source" http://adm:pass@127.0.0.1:25987/copy --create-target)
report "settee replicate, folder -> settee serve (HTTP)" "$secs" "$peak"
read -r secs peak < <(measure "$settee" replicate http://adm:pass@127.0.0.1:25987/copy "$work/back")
report "settee replicate, settee serve (HTTP) -> folder" "$secs" "$peak"

if [ -n "$C" ]; then
  curl -s -X DELETE "$C/bench_source" > /dev/null || true
  curl -s -X DELETE "$C/bench_target" > /dev/null || true
  curl -s -X PUT "$C/bench_source" > /dev/null
  split -l 5000 "$work/docs.ndjson" "$work/part-"
  for part in "$work"/part-*; do
    { printf '{"docs":['; paste -sd, "$part"; printf ']}'; } > "$part.json"
    curl -s -X POST "$C/bench_source/_bulk_docs" -H 'Content-Type: application/json' --data-binary @"$part.json" > /dev/null
  done
  host="${C#*://}"; creds="${host%%@*}"; host="${host#*@}"
  body="{\"source\":\"http://$creds@$host/bench_source\",\"target\":\"http://$creds@$host/bench_target\",\"create_target\":true}"
  start=$(date +%s.%N)
  curl -s -X POST "$C/_replicate" -H 'Content-Type: application/json' -d "$body" > "$work/couch.json"
  end=$(date +%s.%N)
  secs=$(echo "$end - $start" | bc)
  grep -q '"ok":true' "$work/couch.json" || { cat "$work/couch.json"; exit 1; }
  couch_rate=$(echo "$docs / $secs" | bc)
  printf '%-52s %8.2f s %9d docs/s\n' "CouchDB's replicator, database -> database" "$secs" "$couch_rate"
  echo "settee folder -> folder / CouchDB: $(echo "scale=1; $settee_rate / $couch_rate" | bc)x"
  curl -s -X DELETE "$C/bench_source" > /dev/null
  curl -s -X DELETE "$C/bench_target" > /dev/null
fi
