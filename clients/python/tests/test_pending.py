"""Tests of the Python client's reading of a cluster node's 202 answers:
writes logged while their shard has no live replica, reported pending.

They need no fpdb binary: a stand-in server answers as a cluster node
does (package cluster's add, batch, deleteOne and deleteMany). Run from
the repository's root:

    python3 -m unittest discover -s clients/python/tests -p 'test_pending.py' -v
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import unittest
from pathlib import Path
from typing import Any, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # clients/python

from fpdb import AddResult, BatchResult, Client, DeleteResult, Matches  # noqa: E402

DOWN = "down/"  # the ids of the shard with no live replica


class _ShardDown(http.server.BaseHTTPRequestHandler):
    """A cluster node whose shard of the ids starting with DOWN has no live
    replica; the other ids are stored, except those starting with "nope"."""

    def _send(self, status: int, body: Dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        if self.path.startswith("/v1/documents"):
            doc = json.loads(body)
            res = {"id": doc["id"], "stored": True, "replaced": False, "unchanged": False, "rejected": False, "matches": []}
            if doc["id"].startswith(DOWN):
                res["pending"] = True
                self._send(202, res)
            else:
                self._send(201, res)
        elif self.path.startswith("/v1/batch"):
            ids = [json.loads(line)["id"] for line in body.splitlines() if line.strip()]
            res = {"stored": len(ids), "replaced": 0, "unchanged": 0, "skipped": []}
            pending = sum(1 for i in ids if i.startswith(DOWN))
            if pending:
                res["pending"] = pending
            self._send(202 if pending else 200, res)
        elif self.path == "/v1/delete":
            ids: List[str] = json.loads(body)["ids"]
            down = [i for i in ids if i.startswith(DOWN)]
            missing = [i for i in ids if i.startswith("nope")]
            res = {"deleted": len(ids) - len(down) - len(missing)}
            if missing:
                res["not_found"] = missing
            if down:
                res["pending"] = down
            self._send(202 if down else 200, res)
        else:
            self._send(404, {"error": {"code": "not_found", "message": "no such path"}})

    def do_DELETE(self) -> None:  # noqa: N802
        id = self.path[len("/v1/documents/"):].replace("%2F", "/")
        if id.startswith(DOWN):
            self._send(202, {"deleted": 0, "pending": [id]})
        else:
            self._send(200, {"deleted": 1})

    def log_message(self, *args: object) -> None:
        pass


class TestPending(unittest.TestCase):
    def setUp(self) -> None:
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ShardDown)
        self.t = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.t.start()
        self.c = Client("http://127.0.0.1:%d" % self.srv.server_address[1], timeout=10, retries=0)

    def tearDown(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()
        self.t.join(10)

    def test_add(self) -> None:
        r = self.c.add(DOWN + "a", "some words of a document")
        self.assertEqual((r.stored, r.pending, r.replaced, r.unchanged), (True, True, False, False))
        r = self.c.add("up/a", "some words of a document")
        self.assertEqual((r.stored, r.pending), (True, False))

    def test_add_many(self) -> None:
        docs: List[Tuple[str, str]] = [(DOWN + "a", "words one"), ("up/b", "words two"), ("up/c", "words three"), (DOWN + "d", "words four")]
        r = self.c.add_many(docs, batch_size=2)  # two requests, one pending each: summed
        self.assertEqual((r.stored, r.pending), (4, 2))
        r = self.c.add_many(docs[1:3])
        self.assertEqual((r.stored, r.pending), (2, 0))

    def test_delete(self) -> None:
        r = self.c.delete(DOWN + "a")
        self.assertEqual((r.deleted, r.not_found, r.pending), (0, [], [DOWN + "a"]))
        r = self.c.delete("up/a")
        self.assertEqual((r.deleted, r.pending), (1, []))

    def test_delete_many(self) -> None:
        r = self.c.delete_many(["up/a", DOWN + "b", "nope", DOWN + "c"])
        self.assertEqual((r.deleted, r.not_found, r.pending), (1, ["nope"], [DOWN + "b", DOWN + "c"]))
        r = self.c.delete_many(["up/a", "nope"])
        self.assertEqual((r.deleted, r.not_found, r.pending), (1, ["nope"], []))

    def test_single_server_answers(self) -> None:
        # A single server's answers have no "pending": the defaults.
        self.assertFalse(AddResult.from_json({"id": "a", "stored": True, "matches": []}).pending)
        self.assertEqual(DeleteResult.from_json({"deleted": 1}).pending, [])
        self.assertEqual(BatchResult().pending, 0)

    def test_positional_construction(self) -> None:
        # "pending" comes after the fields the results had before it: a
        # result built by position keeps each value in its field.
        m = Matches()
        r = AddResult("a", True, False, False, False, m, 3, {"id": "a"})
        self.assertEqual((r.id, r.stored, r.matches, r.line, r.raw, r.pending), ("a", True, m, 3, {"id": "a"}, False))
        self.assertEqual(AddResult("a", True, False, False, False, m, 0, {}, True).pending, True)
        d = DeleteResult(2, ["x"], True, {"deleted": 2})
        self.assertEqual((d.deleted, d.not_found, d.dry_run, d.raw, d.pending), (2, ["x"], True, {"deleted": 2}, []))
        self.assertEqual(DeleteResult(0, [], False, {}, ["y"]).pending, ["y"])


if __name__ == "__main__":
    unittest.main()
