#!/usr/bin/env bash
# Prints each of the package's targets with the targets it depends on, as
# SwiftPM resolves them (`make modules`). SwiftPM refuses a cycle between
# targets, so the layering this prints is enforced by every build.
set -euo pipefail
cd "$(dirname "$0")/.."
${SWIFT:-swift} package describe | awk '
  /^    Name: / { name = $2; deps = ""; next }
  /^    Target dependencies:/ { collecting = 1; next }
  collecting && /^        / { deps = deps (deps == "" ? "" : ", ") $1; next }
  collecting { if (name != "") printf "%-24s -> %s\n", name, deps; collecting = 0 }
'
