"""A maintained CouchDB client from PyPI (aiocouch) drives `settee serve`.

Run by Scripts/http-test.sh (`make http-test`) with COUCH_HOST, COUCH_USER and
COUCH_PASS set. Each step prints one line: `ok: …` or `FAILED: …`.
Exits 1 when a step failed, 0 otherwise.
"""

import asyncio
import os
import sys
import uuid

from aiocouch import CouchDB

HOST = os.environ.get("COUCH_HOST", "http://127.0.0.1:5984")
USER = os.environ.get("COUCH_USER")
PASSWORD = os.environ.get("COUCH_PASS")

failures = []


def check(condition, what):
    if condition:
        print(f"ok: {what}")
    else:
        print(f"FAILED: {what}")
        failures.append(what)


async def step(what, body):
    """Runs one step; an exception fails it."""
    try:
        await body()
    except Exception as error:  # the step's own words go to the report
        print(f"FAILED: {what}: {type(error).__name__}: {error}")
        failures.append(what)


async def main():
    name = "client_scenario_" + uuid.uuid4().hex[:8]
    async with CouchDB(HOST, user=USER, password=PASSWORD) as couchdb:
        await couchdb.check_credentials()
        info = await couchdb.info()
        check(info.get("couchdb") == "Welcome", f"GET / welcomes ({info.get('version')})")

        db = await couchdb.create(name)
        check(name in await couchdb.keys(), f"database {name} created and listed")

        # Bulk write: 500 documents in one request.
        async def bulk():
            async with db.create_docs() as bulk:
                for i in range(500):
                    bulk.create(f"person-{i:04}", data={"type": "person", "age": i % 90, "name": f"Name {i}",
                                                         "city": ["Berlin", "Dresden", "Leipzig"][i % 3]})
            check(len(bulk.response) == 500 and all(s.get("ok") for s in bulk.response), "bulk write of 500 documents")
            check((await db.info())["doc_count"] == 500, "doc_count is 500")
            doc = await db["person-0042"]
            check(doc["age"] == 42 and doc.rev.startswith("1-"), "a document read back with its revision")
            doc["age"] = 43
            await doc.save()
            check(doc.rev.startswith("2-"), "a document updated to its second revision")
        await step("bulk write", bulk)

        # A view, from a design document the client writes. (aiocouch reads
        # every view answer as a map view's, with total_rows and offset, so the
        # view is map-only.)
        async def view():
            ddoc = await db.design_doc("people")
            await ddoc.create_view("by_city", map_function="function (doc) { if (doc.type === 'person') emit(doc.city, doc.age); }")
            ids = [key async for key in ddoc.view("by_city").ids(["Dresden"])]
            check(len(ids) == 167, f"view by_city key=Dresden: {len(ids)} rows")
            docs = [doc async for doc in ddoc.view("by_city").docs(["Leipzig"])]
            check(len(docs) == 166 and all(d["city"] == "Leipzig" for d in docs), "view by_city include_docs for keys")
            page = await ddoc.view("by_city").get(startkey='"Berlin"', endkey='"Dresden"', limit=3)
            check(page.total_rows == 500 and [row["key"] for row in page.rows] == ["Berlin"] * 3, "view by_city range with limit")
        await step("view query", view)

        # Mango: an index and a find that uses it.
        async def find():
            created = await db.index({"fields": ["age"]}, name="by-age")
            check(created.get("result") in ("created", "exists"), "index on age created")
            found = [doc async for doc in db.find({"age": {"$gte": 80}, "city": "Berlin"})]
            expected = sum(1 for i in range(500) if (43 if i == 42 else i % 90) >= 80 and i % 3 == 0)
            check(len(found) == expected, f"find age >= 80 in Berlin: {len(found)} documents (expected {expected})")
        await step("find", find)

        # The changes feed.
        async def changes():
            events = [event async for event in db.changes()]
            # 500 people, the view's design document and the index's.
            check(len(events) == 502, f"changes: {len(events)} events (500 people + 2 design documents)")
            doc = await db["person-0001"]
            await doc.delete()
            events = [event async for event in db.changes(since=events[-1].sequence)]
            check(len(events) == 1 and events[0].id == "person-0001" and type(events[0]).__name__ == "DeletedEvent",
                  "changes since the last sequence: the deletion")
        await step("changes feed", changes)

        # An attachment put and got.
        async def attachment():
            doc = await db["person-0002"]
            attachment = doc.attachment("note.txt")
            await attachment.save(b"Settee says hello\n", "text/plain")
            check("note.txt" in doc["_attachments"], "attachment put")
            data = await doc.attachment("note.txt").fetch()
            check(data == b"Settee says hello\n", "attachment got back")
        await step("attachment", attachment)

        await db.delete()
        check(name not in await couchdb.keys(), "database deleted")

    print(f"client scenario (aiocouch): {'FAILED: ' + ', '.join(failures) if failures else 'OK'}")
    return 1 if failures else 0


sys.exit(asyncio.run(main()))
