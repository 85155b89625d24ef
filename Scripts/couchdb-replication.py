#!/usr/bin/env python3
"""CouchDB's own replicator against `settee serve`, both ways.

Usage: Scripts/couchdb-replication.py COUCHDB_URL SETTEE_URL [CONTINUOUS_SECONDS] [couchdb|settee]

Both URLs carry an administrator's credentials (http://adm:pass@127.0.0.1:5984).
A source database on CouchDB gets documents of every kind replication must
carry unchanged: numbers past 2^53 and floats such as 1.0, unicode and
escaped ids, conflicts, deletions with bodies, binary and text attachments,
design documents, `_local` documents (which must not replicate). Then:

1. CouchDB's replicator pushes it to Settee (a one-shot `_replicate`), then
   again after more edits (its second checkpoint), then a third time, which
   must write nothing;
2. CouchDB's replicator pulls it back from Settee into a new CouchDB database;
3. every document, with its revision tree (`revs`, `conflicts`,
   `deleted_conflicts`) and attachments' bytes, is compared at the three places;
4. continuous replications run both ways for CONTINUOUS_SECONDS (default 60)
   while both sides are written, and every write must arrive.

The last argument names the replicator that runs every replication:
CouchDB's (`couchdb`, the default: its `_replicate` and `_replicator`) or
Settee's (`settee`: the same requests sent to `settee serve`, whose
replicator then pulls from and pushes to CouchDB).

Prints one line per step and exits 1 at the first difference.
"""
import base64
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

couch, settee = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/")
continuous_seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
runner = settee if len(sys.argv) > 4 and sys.argv[4] == "settee" else couch
runner_name = "Settee" if runner == settee else "CouchDB"
run = str(int(time.time()))


def request(method, url, body=None, headers=None):
    parsed = urllib.parse.urlsplit(url)
    clean = urllib.parse.urlunsplit((parsed.scheme, parsed.hostname + (f":{parsed.port}" if parsed.port else ""),
                                     parsed.path, parsed.query, ""))
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(clean, data=data, method=method)
    if parsed.username:
        token = base64.b64encode(f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password)}".encode())
        request.add_header("Authorization", "Basic " + token.decode())
    if data is not None and not (headers and "Content-Type" in headers):
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def exact(text):
    """JSON parsed with every number kept as its text: 1.0 and 1 differ."""
    return json.loads(text, parse_float=lambda s: "float:" + s, parse_int=lambda s: "int:" + s)


def fail(message):
    print("FAILED:", message)
    sys.exit(1)


def step(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def quote(id):
    return urllib.parse.quote(id, safe="")


def replicate(source, target, **options):
    status, body = request("POST", f"{runner}/_replicate", {"source": source, "target": target, **options})
    if status >= 300:
        fail(f"_replicate {source} -> {target}: {status} {body[:500]!r}")
    return json.loads(body)


def documents(base, db):
    """Every document of db with its revision tree and attachments, by id."""
    status, body = request("GET", f"{base}/{db}/_all_docs")
    if status != 200:
        fail(f"{base}/{db}/_all_docs: {status} {body[:300]!r}")
    ids = [row["id"] for row in json.loads(body)["rows"]]
    status, body = request("GET", f"{base}/{db}/_changes?style=all_docs")
    deleted = [row["id"] for row in json.loads(body)["results"] if row.get("deleted")]
    result = {}
    for id in ids + deleted:
        query = "revs=true&conflicts=true&deleted_conflicts=true&attachments=true"
        if id in deleted:
            status, body = request("GET", f"{base}/{db}/{quote(id)}?open_revs=all&revs=true", headers={"Accept": "application/json"})
            result[id] = sorted(exact(body), key=str)
            continue
        status, body = request("GET", f"{base}/{db}/{quote(id)}?{query}", headers={"Accept": "application/json"})
        if status != 200:
            fail(f"GET {base}/{db}/{id}: {status} {body[:300]!r}")
        document = exact(body)
        for attachment in document.get("_attachments", {}).values():
            # Both store compressible types gzip-encoded, with the same digest; how a read
            # shows the encoding is not compared.
            for key in ("encoding", "encoded_length"):
                attachment.pop(key, None)
        result[id] = document
    return result


def compare(label, left, right):
    if left.keys() != right.keys():
        fail(f"{label}: ids differ: only left {sorted(left.keys() - right.keys())[:5]}, only right {sorted(right.keys() - left.keys())[:5]}")
    for id in left:
        if left[id] != right[id]:
            fail(f"{label}: {id} differs:\n  {json.dumps(left[id])[:600]}\n  {json.dumps(right[id])[:600]}")
    step(f"{label}: {len(left)} documents identical")


source, target, back = f"src{run}", f"settee{run}", f"back{run}"
if runner == settee:
    request("PUT", f"{settee}/_replicator")
status, body = request("PUT", f"{couch}/{source}")
if status != 201:
    fail(f"PUT {couch}/{source}: {status} {body!r}")

# Documents of every kind.
docs = []
for i in range(200):
    docs.append({"_id": f"doc-{i:04d}", "n": i, "big": 9007199254740993 + i, "huge": 123456789012345678901234567890,
                 "float": 1.0, "half": 2.5, "text": "plain ascii " * 3})
docs.append({"_id": "unicode-é/ü 空 ✓", "t": "naïve — “quoted” \u2028"})
docs.append({"_id": "escaped/%2F?&#+ id", "t": "reserved characters"})
docs.append({"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { if (doc.n !== undefined) emit(doc.n, 1.5); }",
                                                     "reduce": "_sum"}},
             "filters": {"even": "function (doc) { return doc.n % 2 === 0; }"}})
docs.append({"_id": "bin", "_attachments": {
    "raw.bin": {"content_type": "application/octet-stream", "data": base64.b64encode(bytes(range(256)) * 64).decode()},
    "note.txt": {"content_type": "text/plain", "data": base64.b64encode(("compressible text " * 500).encode()).decode()}}})
status, body = request("POST", f"{couch}/{source}/_bulk_docs", {"docs": docs})
if status != 201:
    fail(f"_bulk_docs: {status} {body[:300]!r}")
# Conflicts, a deletion with a body, a local document.
request("POST", f"{couch}/{source}/_bulk_docs", {"new_edits": False, "docs": [
    {"_id": "conflicted", "_rev": "2-" + "b" * 32, "_revisions": {"start": 2, "ids": ["b" * 32, "a" * 32]}, "side": "b", "v": 1.0},
    {"_id": "conflicted", "_rev": "2-" + "c" * 32, "_revisions": {"start": 2, "ids": ["c" * 32, "a" * 32]}, "side": "c"},
]})
status, body = request("PUT", f"{couch}/{source}/gone", {"keep": "me"})
rev = json.loads(body)["rev"]
request("PUT", f"{couch}/{source}/gone?rev={rev}", {"_deleted": True, "reason": "deleted with a body"})
request("PUT", f"{couch}/{source}/_local/private", {"not": "replicated"})
step(f"CouchDB {source}: {len(docs) + 2} documents written")

settee_target = f"{settee}/{target}"
result = replicate(f"{couch}/{source}", settee_target, create_target=True)
step(f"CouchDB -> Settee: {result.get('history', [{}])[0].get('docs_written')} written")
compare("CouchDB source vs Settee target", documents(couch, source), documents(settee, target))
status, body = request("GET", f"{settee}/{target}/_local/private")
if status != 404:
    fail("a _local document was replicated")

# More edits, and a second run: the replicator's second checkpoint.
for i in range(0, 200, 10):
    status, body = request("GET", f"{couch}/{source}/doc-{i:04d}")
    document = json.loads(body)
    document["edited"] = True
    request("PUT", f"{couch}/{source}/doc-{i:04d}", document)
result = replicate(f"{couch}/{source}", settee_target)
history = result.get("history", [])
# The statistics of a replication's history add up over its runs.
written = history[0].get("docs_written", 0) - (history[1].get("docs_written", 0) if len(history) > 1 else 0)
if history and history[0].get("start_last_seq") in (0, "0", None):
    fail("the second run started again from sequence 0: the first run's checkpoint was not found")
step(f"CouchDB -> Settee again: {written} written, from the first run's checkpoint")
if written != 20:
    fail(f"the second run wrote {written} documents, not the 20 edited")
result = replicate(f"{couch}/{source}", settee_target)
if not result.get("no_changes") and result.get("history", [{}])[0].get("docs_written", 0) != 0:
    fail(f"a third run wrote something: {result}")
step("CouchDB -> Settee a third time: nothing to write")
compare("after the second run", documents(couch, source), documents(settee, target))

# Settee as the source.
result = replicate(settee_target, f"{couch}/{back}", create_target=True)
step(f"Settee -> CouchDB: {result.get('history', [{}])[0].get('docs_written')} written")
compare("Settee source vs CouchDB target", documents(settee, target), documents(couch, back))

# Continuous both ways, written on both sides.
if continuous_seconds > 0:
    a, b = f"conta{run}", f"contb{run}"
    request("PUT", f"{couch}/{a}")
    request("PUT", f"{settee}/{b}")
    jobs = []
    for name, src, dst in [("push", f"{couch}/{a}", f"{settee}/{b}"), ("pull", f"{settee}/{b}", f"{couch}/{a}")]:
        status, body = request("POST", f"{runner}/_replicator", {"_id": f"{name}{run}", "source": src, "target": dst, "continuous": True})
        if status != 201:
            fail(f"_replicator {name}: {status} {body!r}")
        jobs.append(f"{name}{run}")
    step(f"continuous replications both ways for {continuous_seconds} s")
    started, i, latencies = time.time(), 0, []
    while time.time() - started < continuous_seconds:
        for side, other in [(f"{couch}/{a}", f"{settee}/{b}"), (f"{settee}/{b}", f"{couch}/{a}")]:
            id = f"c{i:05d}"
            request("PUT", f"{side}/{id}", {"i": i, "big": 12345678901234567890, "f": 1.0})
            sent = time.time()
            while True:
                status, _ = request("GET", f"{other}/{id}")
                if status == 200:
                    latencies.append(time.time() - sent)
                    break
                if time.time() - sent > 30:
                    fail(f"{id} written at {side} did not reach {other} in 30 s")
                time.sleep(0.02)
            i += 1
        time.sleep(0.5)
    latencies.sort()
    step(f"continuous: {i} writes arrived, latency p50 {latencies[len(latencies) // 2]:.2f} s, max {latencies[-1]:.2f} s")
    compare("continuous, CouchDB vs Settee", documents(couch, a), documents(settee, b))
    status, body = request("GET", f"{runner}/_scheduler/docs/_replicator")
    for doc in json.loads(body).get("docs", []):
        if doc["doc_id"] in jobs and doc["state"] not in ("running", "pending"):
            fail(f"replication {doc['doc_id']} is {doc['state']}: {doc.get('info')}")
    for job in jobs:
        status, body = request("GET", f"{runner}/_replicator/{job}")
        request("DELETE", f"{runner}/_replicator/{job}?rev={json.loads(body)['_rev']}")
print(f"ok: {runner_name}'s replicator, CouchDB and settee serve agree both ways")
