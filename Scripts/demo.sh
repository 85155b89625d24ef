#!/usr/bin/env bash
# The demo behind `make demo`: imports the example documents into a fresh
# database and shows what it holds.
set -euo pipefail
settee="$1"
db="$2"
rm -rf "$db"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step settee --db "$db" import SampleData/addressbook.ndjson
"$settee" --db "$db" import SampleData/addressbook.ndjson
step settee --db "$db" import SampleData/orders.ndjson
"$settee" --db "$db" import SampleData/orders.ndjson
step settee --db "$db" info
"$settee" --db "$db" info
step settee --db "$db" get contact-001
"$settee" --db "$db" get contact-001
step settee --db "$db" changes --since 148
"$settee" --db "$db" changes --since 148
