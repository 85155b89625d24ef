#!/usr/bin/env bash
# Builds the DocC documentation of the `Settee` and `SetteeServer` libraries
# into .build/docs, failing on any DocC warning and on a public type,
# protocol or free function that no article of the module's catalogue curates.
#
# `Settee` re-exports SetteeCore, SetteeStorage, SetteeViews, SetteeFind and
# SetteeJavaScript: their public symbols are the library's API, so the symbol
# graph is extracted with them before DocC (through swift-docc-plugin) runs.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"

# Fails when a top-level public symbol of graph $1 is curated by no article of catalogue $2.
check_curated() {
  local uncurated
  uncurated=$(python3 - "$1" "$2" <<'PY'
import json, os, re, sys
graph = json.load(open(sys.argv[1]))
top = {s["names"]["title"] for s in graph["symbols"] if len(s["pathComponents"]) == 1}
text = ""
for root, _, files in os.walk(sys.argv[2]):
    for name in files:
        if name.endswith(".md"):
            text += open(os.path.join(root, name)).read()
linked = set(re.findall(r"``([^`]+)``", text))
linked = {l.split("/")[0].split("(")[0] for l in linked}
for name in sorted(top):
    if name.split("(")[0] not in linked:
        print(name)
PY
)
  if [ -n "$uncurated" ]; then
    echo "docs: public symbols of $2 no article curates:" >&2
    echo "$uncurated" >&2
    exit 1
  fi
}

# Fails when DocC's log $1 holds a warning or an error (SwiftPM's warnings
# about files a dependency's package leaves undeclared are not DocC's).
check_log() {
  if grep "^warning\|^error" "$1" | grep -qv "which are unhandled; explicitly declare them"; then
    echo "docs: DocC reported problems (above)" >&2
    exit 1
  fi
}

"$SWIFT" build --target Settee
bin="$("$SWIFT" build --show-bin-path)"
graphs=.build/symbol-graphs-settee
rm -rf "$graphs" && mkdir -p "$graphs"
swift_bin="$(dirname "$(command -v "$SWIFT")")"
"$swift_bin/swift-symbolgraph-extract" \
  -module-name Settee -target "$(uname -m)-unknown-linux-gnu" \
  -I "$bin/Modules" \
  -Xcc -fmodule-map-file="$bin/CSetteeCollation.build/module.modulemap" \
  -Xcc -fmodule-map-file="$bin/CSetteeJS.build/module.modulemap" \
  -Xcc -fmodule-map-file=Sources/CSetteeLMDB/module.modulemap \
  -Xcc -fmodule-map-file=Sources/CSetteeZlib/module.modulemap \
  -Xcc -fmodule-map-file="$bin/CSetteeLMDBGuard.build/module.modulemap" \
  -Xcc -ISources/CSetteeJS/include -Xcc -ISources/CSetteeCollation/include \
  -minimum-access-level public \
  -experimental-allowed-reexported-modules=SetteeCore,SetteeStorage,SetteeViews,SetteeJavaScript,SetteeFind \
  -output-dir "$graphs"
out=.build/docs/Settee.doccarchive
log=.build/docs/docc.log
mkdir -p .build/docs
"$SWIFT" package --allow-writing-to-directory .build/docs generate-documentation \
  --target Settee --output-path "$out" --additional-symbol-graph-dir "$graphs" \
  --warnings-as-errors 2>&1 | tee "$log"
check_log "$log"
# Every top-level public symbol is curated on the root page (Settee.md) or another article.
check_curated "$graphs/Settee.symbols.json" Sources/Settee/Settee.docc
echo "docs: $out"

# SetteeServer and SetteeReplication re-export nothing: each one's own symbol
# graph (for the curation check) is extracted the same way, and the plugin
# builds its documentation.
# SwiftNIO's and its dependencies' C modules: the maps SwiftPM generates, and those the packages ship.
document_module() {
  local module="$1"
  "$SWIFT" build --target "$module"
  local graphs=".build/symbol-graphs-$module"
  rm -rf "$graphs" && mkdir -p "$graphs"
  local module_maps=()
  for map in "$bin"/*.build/module.modulemap .build/checkouts/*/Sources/*/include/module.modulemap; do
    module_maps+=(-Xcc -fmodule-map-file="$map")
  done
  "$swift_bin/swift-symbolgraph-extract" \
    -module-name "$module" -target "$(uname -m)-unknown-linux-gnu" \
    -I "$bin/Modules" \
    "${module_maps[@]}" \
    -Xcc -fmodule-map-file=Sources/CSetteeLMDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CSetteeZlib/module.modulemap \
    -Xcc -fmodule-map-file="$bin/CSetteeLMDBGuard.build/module.modulemap" \
    -Xcc -ISources/CSetteeJS/include -Xcc -ISources/CSetteeCollation/include \
    -minimum-access-level public \
    -output-dir "$graphs"
  local module_out=".build/docs/$module.doccarchive"
  local module_log=".build/docs/docc-$module.log"
  "$SWIFT" package --allow-writing-to-directory .build/docs generate-documentation \
    --target "$module" --output-path "$module_out" \
    --warnings-as-errors 2>&1 | tee "$module_log"
  check_log "$module_log"
  check_curated "$graphs/$module.symbols.json" "Sources/$module/$module.docc"
  echo "docs: $module_out"
}
document_module SetteeServer
document_module SetteeReplication
