#!/usr/bin/env bash
# Runs CouchDB's query-server conformance spec (test/view_server/query_server_spec.rb
# from apache/couchdb, not part of this repository) with `settee couchjs` standing
# as its bin/couchjs.
#
#   Scripts/query-server-spec.sh path/to/query_server_spec.rb path/to/settee
#
# Needs Ruby and RSpec (Debian: apt-get install ruby ruby-rspec).
set -euo pipefail
spec=$(realpath "$1")
settee=$(realpath "$2")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/test/view_server" "$root/share/server"
cp "$spec" "$root/test/view_server/query_server_spec.rb"
# The spec runs `make` in its root first; there is nothing to build.
printf 'all:\n\t@true\n' > "$root/Makefile"
printf '#!/bin/sh\nexec "%s" couchjs "$@"\n' "$settee" > "$root/bin/couchjs"
chmod +x "$root/bin/couchjs"
cd "$root"
rspec test/view_server/query_server_spec.rb
