#!/usr/bin/env bash
# Builds the DocC documentation of the `Settee` library into .build/docs,
# failing on any DocC warning and on a public type, protocol or free function
# that the catalogue's root page does not curate.
#
# `Settee` re-exports SetteeCore, SetteeStorage, SetteeViews, SetteeFind and
# SetteeJavaScript: their public symbols are the library's API, so the symbol
# graph is extracted with them before DocC (through swift-docc-plugin) runs.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"
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
if grep -q "^warning\|^error" "$log"; then
  echo "docs: DocC reported problems (above)" >&2
  exit 1
fi
# Every top-level public symbol is curated on the root page (Settee.md).
uncurated=$(python3 - "$graphs/Settee.symbols.json" Sources/Settee/Settee.docc <<'PY'
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
  echo "docs: public symbols no article curates:" >&2
  echo "$uncurated" >&2
  exit 1
fi
echo "docs: $out"
