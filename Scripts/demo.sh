#!/usr/bin/env bash
# The demo behind `make demo`: imports the example documents into a fresh
# database, loads the design documents in DesignDocs/, builds the indexes and
# runs a few queries.
set -euo pipefail
settee="$1"
db="$2"
rm -rf "$db"
run() {
    printf '\n\033[1m$ settee --db %s' "$db"
    for arg in "$@"; do
        if [[ "$arg" =~ ^[A-Za-z0-9_./-]+$ ]]; then printf ' %s' "$arg"; else printf " '%s'" "$arg"; fi
    done
    printf '\033[0m\n'
    "$settee" --db "$db" "$@"
}

run import SampleData/addressbook.ndjson
run import SampleData/orders.ndjson
run design load DesignDocs/
run index
run query addressbook/by_name --startkey '"D"' --endkey '"H"'
run query addressbook/by_phone --key '"417660791"'
run query addressbook/by_phone --startkey '"41"' --endkey '"42"' --limit 3
run query addressbook/by_city --group true
run query ledger/revenue_by_month --group_level 1
run query ledger/order_stats_by_month --startkey '[2026,1]' --endkey '[2026,3]' --group_level 2
run query ledger/units_by_sku --group true
run query ledger/orders_by_customer --startkey '["contact-001"]' --endkey '["contact-001",{}]' --include_docs true --limit 2
run info
