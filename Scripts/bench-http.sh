#!/usr/bin/env bash
# `make bench-http`: wrk against a release `settee serve` on loopback.
#
# A database of BENCH_HTTP_DOCS documents ({"_id":"doc-000042","n":42,"group":…})
# is imported with `settee import`, then wrk (WRK_THREADS threads, WRK_CONNECTIONS
# connections, WRK_SECONDS seconds each) measures requests/s and latency for:
#   GET /bench/{docid}              a random document
#   GET /bench/_design/b/_view/by_n?key=N   a view key lookup (random key)
#   POST /bench/_find               {"selector":{"n":N}} on a JSON index of n
#   POST /bench/_bulk_docs          1,000 new documents a request
# then a mixed overload (MIXED_SECONDS, 200 connections at once, one wrk per
# kind): 50 document GETs, 50 view key lookups, 40 `_find`s, 50
# `_changes?feed=longpoll&timeout=2000&since=now` and 10 single-document
# writers; p50/p99 per kind, and the documents acknowledged are counted back.
# Usage: Scripts/bench-http.sh SETTEE_BINARY
set -euo pipefail
settee="$1"
docs="${BENCH_HTTP_DOCS:-100000}"
seconds="${WRK_SECONDS:-10}"
threads="${WRK_THREADS:-2}"
connections="${WRK_CONNECTIONS:-32}"
work="$(mktemp -d "${TMPDIR:-/tmp}/settee-bench-http.XXXXXX")"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "Importing $docs documents…"
awk -v n="$docs" 'BEGIN { for (i = 0; i < n; i++) printf "{\"_id\":\"doc-%06d\",\"n\":%d,\"group\":\"g%d\",\"text\":\"document number %d\"}\n", i, i, i % 100, i }' >"$work/docs.ndjson"
mkdir -p "$work/data"
"$settee" --db "$work/data/bench" import "$work/docs.ndjson" >/dev/null

"$settee" serve --data "$work/data" --port 0 >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
port=""
for _ in $(seq 1 100); do
    port="$(sed -n 's|.*"listening":"http://[^:]*:\([0-9]*\)/".*|\1|p' "$work/server.out" | head -1)"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { echo "bench-http: settee serve printed no port" >&2; exit 1; }
url="http://127.0.0.1:$port"

echo "Building the view and the index…"
curl -sf -X PUT "$url/bench/_design/b" -H 'Content-Type: application/json' \
    -d '{"views":{"by_n":{"map":"function (doc) { if (typeof doc.n === \"number\") emit(doc.n, doc.group); }"}}}' >/dev/null
curl -sf "$url/bench/_design/b/_view/by_n?key=1" >/dev/null
curl -sf -X POST "$url/bench/_index" -H 'Content-Type: application/json' \
    -d '{"index":{"fields":["n"]},"name":"by-n","ddoc":"by-n"}' >/dev/null
curl -sf -X POST "$url/bench/_find" -H 'Content-Type: application/json' -d '{"selector":{"n":1}}' >/dev/null

cat >"$work/get.lua" <<EOF
math.randomseed(os.time())
request = function()
  return wrk.format("GET", string.format("/bench/doc-%06d", math.random(0, $docs - 1)))
end
EOF
cat >"$work/view.lua" <<EOF
math.randomseed(os.time() + 1)
request = function()
  return wrk.format("GET", "/bench/_design/b/_view/by_n?key=" .. math.random(0, $docs - 1))
end
EOF
cat >"$work/find.lua" <<EOF
math.randomseed(os.time() + 2)
request = function()
  return wrk.format("POST", "/bench/_find", {["Content-Type"] = "application/json"},
                    '{"selector":{"n":' .. math.random(0, $docs - 1) .. '}}')
end
EOF
cat >"$work/bulk.lua" <<'EOF'
local parts = {}
for i = 1, 1000 do parts[i] = '{"kind":"bulk","i":' .. i .. ',"text":"a new document written in bulk"}' end
local body = '{"docs":[' .. table.concat(parts, ",") .. ']}'
request = function()
  return wrk.format("POST", "/bench/_bulk_docs", {["Content-Type"] = "application/json"}, body)
end
EOF

results=()
run() {
    local label="$1" script="$2" conns="$3"
    local out
    out="$(wrk -t"$threads" -c"$conns" -d"${seconds}s" --latency -s "$work/$script" "$url/")"
    local rps p50 p99 errors
    rps="$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
    p50="$(awk '$1 == "50%" { print $2 }' <<<"$out")"
    p99="$(awk '$1 == "99%" { print $2 }' <<<"$out")"
    errors="$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")"
    results+=("$(printf '%-34s %12s %10s %10s %s' "$label" "$rps" "$p50" "$p99" "${errors:+($errors non-2xx)}")")
    echo "${results[-1]}"
}
printf '\nwrk: %s threads, %s seconds each, loopback; %s documents\n' "$threads" "$seconds" "$docs"
printf '%-34s %12s %10s %10s\n' "request" "requests/s" "p50" "p99"
run "GET /{db}/{docid}" get.lua "$connections"
run "GET view ?key=" view.lua "$connections"
run "POST _find (indexed field)" find.lua "$connections"
run "POST _bulk_docs (1,000 docs)" bulk.lua 4

# The mixed overload: every kind at once, 200 connections in all.
mixed_seconds="${MIXED_SECONDS:-30}"
cat >"$work/longpoll.lua" <<'EOF'
request = function()
  return wrk.format("GET", "/bench/_changes?feed=longpoll&timeout=2000&since=now")
end
EOF
cat >"$work/write.lua" <<'EOF'
request = function()
  return wrk.format("POST", "/bench", {["Content-Type"] = "application/json"}, '{"kind":"mixed","text":"written under load"}')
end
EOF
sleep 1
doc_count() { curl -sf "$url/bench" | sed -n 's/.*"doc_count":\([0-9]*\).*/\1/p'; }
before="$(doc_count)"
printf '\nMixed overload: %s connections for %s s at once (one wrk of one thread per kind)\n' "$((190 + ${MIXED_WRITERS:-10}))" "$mixed_seconds"
printf '%-34s %12s %10s %10s\n' "request" "requests/s" "p50" "p99"
kinds=("GET /{db}/{docid}|get.lua|50" "GET view ?key=|view.lua|50" "POST _find (indexed field)|find.lua|40"
       "GET _changes longpoll 2 s|longpoll.lua|50")
writers="${MIXED_WRITERS:-10}"
[ "$writers" -gt 0 ] && kinds+=("POST /{db} (one document)|write.lua|$writers")
pids=()
for kind in "${kinds[@]}"; do
    IFS='|' read -r label script conns <<<"$kind"
    wrk -t1 -c"$conns" -d"${mixed_seconds}s" --timeout 60s --latency -s "$work/$script" "$url/" >"$work/mixed-$script.out" 2>&1 &
    pids+=($!)
done
wait "${pids[@]}"
written=0
for kind in "${kinds[@]}"; do
    IFS='|' read -r label script conns <<<"$kind"
    out="$(cat "$work/mixed-$script.out")"
    rps="$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
    p50="$(awk '$1 == "50%" { print $2 }' <<<"$out")"
    p99="$(awk '$1 == "99%" { print $2 }' <<<"$out")"
    errors="$(awk '/Non-2xx or 3xx responses:/ { print $NF }' <<<"$out")"
    timeouts="$(sed -n 's/.*timeout \([0-9]*\).*/\1/p' <<<"$out")"
    printf '%-34s %12s %10s %10s %s%s\n' "$label" "$rps" "$p50" "$p99" "${errors:+($errors non-2xx) }" \
        "$([ "${timeouts:-0}" -gt 0 ] && echo "($timeouts timed out)")"
    if [ "$script" = write.lua ]; then
        written=$(( $(awk '/requests in/ { print $1 }' <<<"$out") - ${errors:-0} ))
    fi
done
sleep 1
added=$(( $(doc_count) - before ))
printf 'Writes acknowledged under load: %s; documents added: %s %s\n' "$written" "$added" \
    "$([ "$added" -ge "$written" ] && echo "(none lost)" || echo "(WRITES LOST)")"
