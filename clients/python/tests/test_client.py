"""Tests of the Python client against a real `fpdb serve`.

Run from the repository's root:

    python3 -m unittest discover -s clients/python/tests -v

The fpdb binary is $FPDB_BIN, else built once from this repository with
`go build` into a temporary directory. Each test starts its own server on
127.0.0.1 (a fresh database in a temporary directory) and stops it with
SIGTERM (SIGKILL after a grace period).
"""

from __future__ import annotations

import http.server
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
CLIENT_DIR = HERE.parent  # clients/python
REPO = CLIENT_DIR.parent.parent
sys.path.insert(0, str(CLIENT_DIR))

import fpdb  # noqa: E402
from fpdb import (  # noqa: E402
    AddResult,
    BadRequest,
    BadResponse,
    Client,
    Cluster,
    ConnectionFailed,
    Document,
    Forbidden,
    FpdbError,
    Match,
    NotFound,
    OutcomeUnknown,
    Pair,
    ServerError,
    Timeout,
    TooLarge,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from fpdb.errors import error_from_response  # noqa: E402

_build_dir: Optional[str] = None
FPDB_BIN = ""


def setUpModule() -> None:
    global _build_dir, FPDB_BIN
    for var in ("FPDB_SERVER", "FPDB_URL", "FPDB_TOKEN"):  # the tests choose their server and token
        os.environ.pop(var, None)
    env_bin = os.environ.get("FPDB_BIN")
    if env_bin:
        FPDB_BIN = str(Path(env_bin).resolve())
        if not os.access(FPDB_BIN, os.X_OK):
            raise RuntimeError("FPDB_BIN=%s is not an executable" % env_bin)
        return
    _build_dir = tempfile.mkdtemp(prefix="fpdb-pytest-bin-")
    FPDB_BIN = os.path.join(_build_dir, "fpdb")
    go = os.environ.get("GO", "go")
    r = subprocess.run(
        [go, "build", "-o", FPDB_BIN, "./cmd/fpdb"],
        cwd=str(REPO),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=900,
    )
    if r.returncode != 0:
        raise RuntimeError("go build ./cmd/fpdb failed:\n" + r.stdout.decode("utf-8", "replace"))


def tearDownModule() -> None:
    if _build_dir:
        shutil.rmtree(_build_dir, ignore_errors=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """An `fpdb serve` subprocess on 127.0.0.1 with its own database."""

    def __init__(self, workdir: str, *args: str) -> None:
        self.dir = workdir
        self.db = os.path.join(workdir, "db")
        self.log_path = os.path.join(workdir, "serve.log")
        self.proc: Optional[subprocess.Popen] = None
        self.status: Optional[int] = None
        for _ in range(5):  # another process may take the free port first
            self.port = free_port()
            self.url = "http://127.0.0.1:%d" % self.port
            with open(self.log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    [FPDB_BIN, "--db", self.db, "serve", "--addr", "127.0.0.1:%d" % self.port, *args],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
            if self._wait_ready():
                return
            if "address already in use" not in self.log():
                break
        log = self.log()
        self.stop()
        raise RuntimeError("fpdb serve did not become ready:\n" + log)

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as r:
                    # Ours, not another process's that took the port first.
                    if r.status == 200 and ("msg=serving url=%s " % self.url) in self.log():
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def log(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self) -> Optional[int]:
        """SIGTERM, then SIGKILL after 15 s; returns the exit status."""
        p, self.proc = self.proc, None
        if p is None:
            return self.status
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)
        self.status = p.returncode
        return self.status

    def paths(self) -> List[str]:
        """The API paths this server's OpenAPI document lists."""
        with urllib.request.urlopen(self.url + "/v1/openapi.json", timeout=10) as r:
            return list(json.load(r)["paths"])


# -- texts -------------------------------------------------------------------

_SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zu", "bo", "da", "fi", "gu", "he", "jo"]


def vocabulary(seed: int, n: int = 3000) -> List[str]:
    rnd = random.Random(seed)
    words = set()
    while len(words) < n:
        words.add("".join(rnd.choice(_SYLLABLES) for _ in range(rnd.randint(2, 4))))
    return sorted(words)


VOCAB = vocabulary(1)


def text(seed: int, words: int = 400) -> str:
    rnd = random.Random(seed)
    return " ".join(rnd.choice(VOCAB) for _ in range(words))


def edit(t: str, share: float, seed: int) -> str:
    """t with `share` of its words replaced by others."""
    rnd = random.Random(seed)
    ws = t.split()
    for i in rnd.sample(range(len(ws)), int(len(ws) * share)):
        ws[i] = rnd.choice(VOCAB) + "x"
    return " ".join(ws)


class ServerTest(unittest.TestCase):
    """Starts a server (args from server_args) and a client of it."""

    server_args: List[str] = []

    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="fpdb-pytest-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.server = Server(self.tmp, *self.server_args_for_test())
        self.addCleanup(self.stop_server)
        self.c = Client(self.server.url, timeout=30)

    def server_args_for_test(self) -> List[str]:
        return list(self.server_args)

    def stop_server(self) -> None:
        status = self.server.stop()
        self.assertEqual(status, 0, "fpdb serve did not exit 0 after SIGTERM:\n" + self.server.log())

    def skip_unless_served(self, path: str) -> None:
        """Skip when the endpoint is not built in this server yet: absent from
        its OpenAPI document and answered 404 (a route that exists answers a
        GET with 405 or another status)."""
        if path in self.server.paths():
            return
        try:
            urllib.request.urlopen(self.server.url + path, timeout=10).close()
            status = 200
        except urllib.error.HTTPError as e:
            status = e.code
            e.close()
        if status != 404:
            self.fail("%s answers HTTP %d but /v1/openapi.json does not list it" % (path, status))
        self.skipTest("%s is not built in this fpdb serve yet (HTTP 404, not in /v1/openapi.json)" % path)


# -- the tests ---------------------------------------------------------------


class TestDocuments(ServerTest):
    def test_add_and_query_order_near_duplicates(self) -> None:
        orig = text(10)
        near = {"v02": edit(orig, 0.02, 1), "v06": edit(orig, 0.06, 2), "v10": edit(orig, 0.10, 3)}
        r = self.c.add("orig", orig)
        self.assertIsInstance(r, AddResult)
        self.assertTrue(r.stored)
        self.assertFalse(r.rejected or r.replaced or r.unchanged)
        self.assertEqual(r.matches, [])
        for i in range(5):
            self.assertTrue(self.c.add("other-%d" % i, text(100 + i)).stored)
        for k, t in near.items():
            r = self.c.add(k, t, threshold=0.2)
            self.assertTrue(r.stored, k)
            self.assertIn("orig", r.matches.ids(), k)

        ms = self.c.query(orig, threshold=0.2)
        self.assertEqual(ms.ids(), ["orig", "v02", "v06", "v10"], ms)
        for m in ms:
            self.assertIsInstance(m, Match)
            self.assertIsInstance(m.similarity, float)
        sims = [m.similarity for m in ms]
        self.assertEqual(sims, sorted(sims, reverse=True))
        self.assertEqual(ms[0].similarity, 1.0)
        self.assertEqual(ms[0].hamming, 0)
        self.assertTrue(ms[0].exact)
        self.assertFalse(ms[1].exact)
        self.assertGreater(ms[1].similarity, 0.7)
        self.assertLess(ms[3].similarity, 0.9)
        self.assertIsNone(ms.explain)

        # The default threshold is 0.7; limit; the same answer from every exact plan.
        default = self.c.query(orig)
        self.assertTrue(all(m.similarity >= 0.7 for m in default))
        self.assertIn("v02", default.ids())
        self.assertEqual(self.c.query(orig, 0.2, limit=2).ids(), ["orig", "v02"])
        self.assertEqual(self.c.query(orig, 0.2, plan="scan").ids(), ms.ids())
        self.assertEqual(self.c.query(orig, 0.2, plan="probe").ids(), ms.ids())
        ex = self.c.query(orig, 0.2, plan="scan", explain=True)
        self.assertEqual(ex.explain["plan"], "scan")
        self.assertEqual(ex.ids(), ms.ids())
        # Bytes are sent as they are.
        self.assertEqual(self.c.query(orig.encode(), 0.2).ids(), ms.ids())
        # An unrelated text matches nothing.
        self.assertEqual(self.c.query(text(999)), [])

    def test_add_reject_refuses_a_near_duplicate(self) -> None:
        orig = text(20)
        self.c.add("a", orig)
        r = self.c.add("b", edit(orig, 0.02, 5), threshold=0.7, reject=True)
        self.assertFalse(r.stored)
        self.assertTrue(r.rejected)
        self.assertEqual(r.matches.ids(), ["a"])
        self.assertGreater(r.matches[0].similarity, 0.7)
        with self.assertRaises(NotFound):
            self.c.get("b")
        self.assertEqual(self.c.stats().docs, 1)
        # A distinct text passes the same check.
        r = self.c.add("c", text(21), threshold=0.7, reject=True)
        self.assertTrue(r.stored)
        self.assertFalse(r.rejected)
        # Without reject the near duplicate is stored and reported.
        r = self.c.insert("b", edit(orig, 0.02, 5), threshold=0.7)
        self.assertTrue(r.stored)
        self.assertEqual(r.matches.ids(), ["a"])
        self.assertEqual(self.c.stats().docs, 3)

    def test_same_id_unchanged_replace(self) -> None:
        t = text(30)
        self.assertTrue(self.c.add("d", t).stored)
        r = self.c.add("d", t)
        self.assertTrue(r.unchanged)
        self.assertFalse(r.stored)
        self.assertFalse(r.rejected)
        r = self.c.add("d", t, replace=True)
        self.assertTrue(r.stored and r.replaced)
        r = self.c.add("d", text(31), source="s2")
        self.assertTrue(r.stored and r.replaced)
        self.assertEqual(self.c.get("d").source, "s2")
        self.assertEqual(self.c.stats().docs, 1)

    def test_get_with_awkward_ids(self) -> None:
        t = text(40, 50)
        ids = ["dir/sub/a.txt", "with space?&=#%20", "../up", "Ünïcødé/文書", "https://example.org/a?b=1", ".", "..", "%2E"]
        for i, id in enumerate(ids):
            self.c.add(id, t + " " + VOCAB[i], source="src-%d" % i)
        for i, id in enumerate(ids):
            d = self.c.get(id)
            self.assertIsInstance(d, Document)
            self.assertEqual(d.id, id)
            self.assertEqual(d.source, "src-%d" % i)
            self.assertEqual(d.words, 51)
            self.assertGreater(d.shingles, 0)
            self.assertEqual(d.size, len((t + " " + VOCAB[i]).encode()))
            self.assertEqual(len(d.fingerprint), self.c.stats().k // 4)
            self.assertRegex(d.content_hash, "^[0-9a-f]+$")
            self.assertRegex(d.added, r"^\d{4}-\d\d-\d\dT")
            self.assertIn(id, self.c)
        self.assertNotIn("dir", self.c)
        self.assertNotIn("dir/sub", self.c)
        # Ids of dot segments alone are escaped, not cleaned away.
        for id in (".", ".."):
            self.assertEqual(self.c.delete(id).deleted, 1)
            self.assertNotIn(id, self.c)
        self.assertIn("%2E", self.c)
        with self.assertRaises(NotFound) as cm:
            self.c.get("dir/sub")
        e = cm.exception
        self.assertEqual((e.status, e.code), (404, "not_found"))
        self.assertIn("dir/sub", e.message)
        self.assertTrue(e.request_id)

        # The same normalized text: the same content hash, an exact match.
        t2 = text(41, 50)
        self.c.add("upper", t2.upper() + "!!")
        self.c.add("plain", t2)
        self.assertEqual(self.c.get("upper").content_hash, self.c.get("plain").content_hash)
        # A stored fingerprint queries as its text does.
        d = self.c.get("plain")
        by_fp = self.c.query_fingerprint(d.fingerprint, 0.9, shingles=d.shingles)
        self.assertEqual(set(by_fp.ids()), {"plain", "upper"})
        self.assertEqual(by_fp[0].similarity, 1.0)

    def test_source_not_utf8(self) -> None:
        # A file name of any bytes: Document.source is it as os.fsdecode
        # gives it (UTF-8 with surrogateescape), whoever stored it.
        raw = b"dir/caf\xe9-\xff.txt"
        name = raw.decode("utf-8", "surrogateescape")
        t = text(50, 40)
        req = urllib.request.Request(
            self.server.url + "/v1/documents?id=by-http&source=dir/caf%E9-%FF.txt",
            data=t.encode(),
            headers={"Content-Type": "text/plain"},
        )
        urllib.request.urlopen(req, timeout=30).close()
        self.c.add("by-str", t + " one", source=name)
        self.c.add("by-bytes", (t + " two").encode(), source=name)
        for id in ("by-http", "by-str", "by-bytes"):
            d = self.c.get(id)
            self.assertEqual(d.source, name, id)
            self.assertEqual(d.source.encode("utf-8", "surrogateescape"), raw, id)
            if os.name == "posix":
                self.assertEqual(os.fsencode(d.source), raw, id)
            self.assertIn("\ufffd", d.raw["source"], id)
        self.assertEqual(self.c.get("by-str").words, 41)
        # A UTF-8 source is as it was given.
        self.c.add("utf8", t, source="dir/café.txt")
        self.assertEqual(self.c.get("utf8").source, "dir/café.txt")
        # add_many cannot carry such a source (JSON strings): the items
        # before it are stored, and the error says where to go on.
        with self.assertRaises(BadRequest) as cm:
            self.c.add_many([("many-1", t + " three"), ("many-2", t + " four", name)])
        self.assertEqual(cm.exception.failed_line, 2)
        self.assertEqual(cm.exception.done.stored, 1)
        self.assertIn("many-1", self.c)
        self.assertNotIn("many-2", self.c)

    def test_delete(self) -> None:
        self.c.add("x/1", text(50))
        self.c.add("x/2", text(51))
        r = self.c.delete("x/1", dry_run=True)
        self.assertEqual((r.deleted, r.dry_run), (1, True))
        self.assertIn("x/1", self.c)
        r = self.c.delete("x/1")
        self.assertEqual((r.deleted, r.dry_run), (1, False))
        self.assertNotIn("x/1", self.c)
        with self.assertRaises(NotFound):
            self.c.get("x/1")
        with self.assertRaises(NotFound):
            self.c.delete("x/1")
        with self.assertRaises(NotFound):
            self.c.delete("x/1", dry_run=True)
        self.assertEqual(self.c.remove("x/2").deleted, 1)
        self.c.add("y", text(52))
        self.assertEqual(self.c.delete("y", forget=True).deleted, 1)
        self.assertEqual(len(self.c), 0)
        self.assertEqual(self.c.query(text(50)), [])

    def test_absent_only_when_the_server_says_so(self) -> None:
        # The server's "document not found": its error names the reason.
        self.c.add("here", text(53))
        self.assertIn("here", self.c)
        self.assertNotIn("nope", self.c)
        with self.assertRaises(NotFound) as cm:
            self.c.get("nope")
        self.assertEqual((cm.exception.status, cm.exception.reason), (404, "not_found"))
        with self.assertRaises(NotFound):
            self.c.delete("nope")
        # A wrong base URL: the server answers 404 "no such path" (no
        # reason) to /v1/v1/documents/...; that is no answer about the
        # document, and says which URL was asked.
        for base in (self.server.url + "/v1", self.server.url + "/nowhere"):
            wrong = Client(base, timeout=30)
            calls = [
                ("in", lambda: "here" in wrong),
                ("in", lambda: "nope" in wrong),
                ("get", lambda: wrong.get("here")),
                ("delete", lambda: wrong.delete("here")),
            ]
            for what, call in calls:
                with self.assertRaises(BadResponse, msg="%s %s" % (base, what)) as cm:
                    call()
                e = cm.exception
                self.assertNotIsInstance(e, NotFound)
                self.assertIsInstance(e, FpdbError)
                self.assertEqual((e.status, e.code, e.reason), (404, "bad_response", ""))
                self.assertIn(base + "/v1/documents/", str(e))
                self.assertIn("no such path", str(e))
                self.assertIn("base URL", str(e))
        self.assertIn("here", self.c)  # the delete to the wrong URL did nothing

    def test_id_not_utf8(self) -> None:
        # A file name whose bytes are not UTF-8, as os.fsdecode gives it
        # (lone surrogates): refused as add_many refuses it, before a
        # request is sent (a client of no server says so too).
        bad = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
        nobody = Client("http://127.0.0.1:%d" % free_port(), timeout=5, retries=0)
        for c in (self.c, nobody):
            calls = [
                ("add", lambda: c.add(bad, text(54))),
                ("add", lambda: c.add(bad, text(54).encode())),
                ("add", lambda: c.insert(bad, text(54), threshold=0.5)),
                ("get", lambda: c.get(bad)),
                ("id in client", lambda: bad in c),
                ("delete", lambda: c.delete(bad)),
                ("delete", lambda: c.remove(bad)),
                ("delete_many", lambda: c.delete_many(["ok", bad])),
            ]
            for what, call in calls:
                with self.assertRaises(BadRequest, msg=what) as cm:
                    call()
                e = cm.exception
                self.assertEqual((e.code, e.status), ("bad_request", None), what)
                self.assertIn(what + ": the id 'caf\\udce9.txt' is not UTF-8 text", str(e), what)
                self.assertTrue(e.__suppress_context__, what)  # no UnicodeEncodeError shown
        self.assertEqual(self.c.stats().docs, 0)
        # add_many refuses the same id as well.
        with self.assertRaises(BadRequest):
            self.c.add_many([(bad, text(54))])

    def test_stats(self) -> None:
        s = self.c.stats()
        self.assertEqual(s.docs, 0)
        self.assertEqual(s.k, 512)
        self.assertGreater(s.shingle_width, 0)
        self.assertIn("format_version", s.raw)
        for i in range(7):
            self.c.add("s%d" % i, text(60 + i))
        self.c.delete("s3")
        s = self.c.stats()
        self.assertEqual(s.docs, 6)
        self.assertGreater(s.disk_bytes, 0)
        self.assertEqual(len(self.c), 6)
        self.assertFalse(s.import_incomplete)
        # The server sends the field only when an import did not finish.
        self.assertTrue(fpdb.Stats.from_json({"docs": 2, "import_incomplete": True}).import_incomplete)

    def test_containment_and_formats(self) -> None:
        long = text(70, 600)
        self.c.add("long", long)
        half = " ".join(long.split()[:300])
        self.assertEqual(self.c.query(half, 0.9), [])
        ms = self.c.query(half, containment=0.8)
        self.assertEqual(ms.ids(), ["long"])
        self.assertGreater(ms[0].query_in_doc, 0.8)
        self.assertLess(ms[0].similarity, 0.7)
        self.assertEqual(self.c.query(half, 0.9, containment=0.8), [])
        # HTML is read as its text; bytes in another encoding are decoded.
        html = "<html><body><p>" + long.replace(" ", " <b>x</b> ", 0) + "</p></body></html>"
        self.assertEqual(self.c.query(html, 0.9, format="html").ids(), ["long"])
        latin = ("café crème brûlée " * 30).encode("latin-1")
        r = self.c.add("latin", latin, encoding="latin1")
        self.assertTrue(r.stored)
        self.assertEqual(self.c.query("café crème brûlée " * 30, 0.9).ids(), ["latin"])


class TestErrors(ServerTest):
    server_args = ["--max-body", "20000"]

    def test_bad_requests(self) -> None:
        cases = [
            lambda: self.c.add("empty", ""),
            lambda: self.c.add("", text(1)),
            lambda: self.c.add("r", text(1), reject=True),  # reject needs a threshold
            lambda: self.c.add("t", text(1), threshold=1.5),
            lambda: self.c.query(text(1), 2.0),
            lambda: self.c.query(text(1), plan="sideways"),
            lambda: self.c.query_fingerprint("zz"),
        ]
        for i, call in enumerate(cases):
            with self.assertRaises(BadRequest, msg="case %d" % i) as cm:
                call()
            e = cm.exception
            self.assertEqual((e.status, e.code), (400, "bad_request"), i)
            self.assertTrue(e.message and e.request_id, i)
            self.assertIn(e.request_id, str(e))
        self.assertEqual(self.c.stats().docs, 0)

    def test_query_threshold_zero(self) -> None:
        # 0 is no resemblance in (0, 1]: the server refuses it however the
        # query is sent (in JSON too, where it is not read as absent).
        self.c.add("a", text(3))
        self.assertEqual(self.c.query(text(3)).ids(), ["a"])
        fp = self.c.get("a").fingerprint
        self.assertEqual(self.c.query_fingerprint(fp).ids(), ["a"])
        calls = []
        for t in (text(3), text(3).encode("utf-8")):
            for th in (0, 0.0, -0.5):
                calls.append((repr((type(t), th)), lambda t=t, th=th: self.c.query(t, th)))
            calls.append(("containment", lambda t=t: self.c.query(t, 0, containment=0.5)))
        calls.append(("fingerprint", lambda: self.c.query_fingerprint(fp, 0)))
        calls.append(("fingerprint, containment", lambda: self.c.query_fingerprint(fp, 0, shingles=10, containment=0.5)))
        self.assert_threshold_refused(calls)

    def assert_threshold_refused(self, calls) -> None:
        """Each (what, call) of calls raises the server's 400 about the threshold."""
        for what, call in calls:
            with self.assertRaises(BadRequest, msg=what) as cm:
                call()
            e = cm.exception
            self.assertEqual((e.status, e.code), (400, "bad_request"), what)
            self.assertIn("threshold", e.message, what)
            self.assertTrue(e.request_id, "%s: the server answered" % what)

    def test_add_threshold_zero(self) -> None:
        # 0 is no resemblance in (0, 1]: the server refuses it, as for a
        # query, however the add is sent; nothing is stored without a check.
        self.c.add("a", text(3))
        calls = []
        for t in (text(3), text(3).encode("utf-8")):
            for th in (0, 0.0, -0.5):
                calls.append((repr((type(t), th)), lambda t=t, th=th: self.c.add("p2", t, threshold=th)))
            calls.append(("reject", lambda t=t: self.c.add("p2", t, threshold=0, reject=True)))
        self.assert_threshold_refused(calls)
        with self.assertRaises(NotFound):
            self.c.get("p2")
        self.assertEqual(self.c.stats().docs, 1)
        # Left out, there is no check.
        self.assertTrue(self.c.add("p2", text(3)).stored)

    def test_too_large(self) -> None:
        with self.assertRaises(TooLarge) as cm:
            self.c.add("big", text(2, 8000))
        self.assertEqual((cm.exception.status, cm.exception.code), (413, "too_large"))
        self.assertEqual(self.c.stats().docs, 0)

    def test_add_many_partial(self) -> None:
        self.skip_unless_served("/v1/batch")
        docs = [("p%d" % i, text(800 + i, 300 if i != 3 else 2500)) for i in range(6)]
        with self.assertRaises(TooLarge) as cm:  # the second request is over --max-body
            self.c.add_many(docs, batch_size=2, threshold=0.8)
        e = cm.exception
        self.assertEqual(e.failed_line, 3)
        self.assertEqual((e.done.stored, [(x.line, x.id) for x in e.done.results]), (2, [(1, "p0"), (2, "p1")]))
        self.assertEqual((len(self.c), "p1" in self.c, "p2" in self.c), (2, True, False))
        with self.assertRaises(ConnectionFailed) as cm:
            Client("http://127.0.0.1:%d" % free_port(), timeout=5).add_many(docs)
        self.assertEqual((cm.exception.failed_line, cm.exception.done.stored), (1, 0))

    def test_add_many_bytes_not_utf8(self) -> None:
        self.skip_unless_served("/v1/batch")
        docs = [("u0", text(900, 40)), ("u1", text(901, 40).encode("utf-8")), ("u2", b"caf\xe9 " + text(902, 40).encode())]
        with self.assertRaises(BadRequest) as cm:
            self.c.add_many(docs, batch_size=2)
        e = cm.exception
        self.assertIn("item 3", str(e))
        self.assertIn("'u2'", str(e))
        self.assertIn("not UTF-8", str(e))
        self.assertEqual((e.failed_line, e.done.stored), (3, 2))
        self.assertEqual(("u1" in self.c, "u2" in self.c), (True, False))

    def test_server_not_running(self) -> None:
        port = free_port()
        c = Client("http://127.0.0.1:%d" % port, timeout=5)
        for call in (c.stats, lambda: c.add("a", "b c d e"), lambda: c.query("x y z")):
            with self.assertRaises(ConnectionFailed) as cm:
                call()
            self.assertIsInstance(cm.exception, ConnectionError)
            self.assertIsInstance(cm.exception, FpdbError)
            self.assertIn("127.0.0.1:%d" % port, str(cm.exception))
            self.assertIn("fpdb serve", str(cm.exception))
        self.assertFalse(c.ready())
        self.assertTrue(self.c.ready())

    def test_client_timeout(self) -> None:
        # A listener that never answers.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            c = Client("http://127.0.0.1:%d" % s.getsockname()[1], timeout=0.5)
            t0 = time.monotonic()
            with self.assertRaises(Timeout):
                c.stats()
            self.assertLess(time.monotonic() - t0, 10)

    def test_shutdown(self) -> None:
        self.assertEqual(self.server.stop(), 0)
        with self.assertRaises(ConnectionFailed):
            self.c.stats()


class TestTokens(ServerTest):
    RO = "ro-token-0123456789abcdef"
    RW = "rw-token-fedcba9876543210"

    def server_args_for_test(self) -> List[str]:
        path = os.path.join(self.tmp, "tokens")
        with open(path, "w") as f:
            f.write("# test tokens\nro %s\nrw %s\n" % (self.RO, self.RW))
        return ["--tokens", path]

    def test_tokens(self) -> None:
        rw = Client(self.server.url, self.RW)
        ro = Client(self.server.url, token=self.RO)
        self.assertTrue(rw.add("a", text(80)).stored)
        # No token, an unknown one: 401 for reads and writes alike.
        for c in (self.c, Client(self.server.url, "not-a-token-of-this-server")):
            for call in (c.stats, lambda: c.get("a"), lambda: c.add("b", text(81)), lambda: c.query(text(80))):
                with self.assertRaises(Unauthorized) as cm:
                    call()
                self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
        # Read-only: reads, no writes.
        self.assertEqual(ro.stats().docs, 1)
        self.assertEqual(ro.get("a").id, "a")
        self.assertEqual(ro.query(text(80)).ids(), ["a"])
        for call in (lambda: ro.add("b", text(81)), lambda: ro.delete("a")):
            with self.assertRaises(Forbidden) as cm:
                call()
            self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))
        self.assertEqual(rw.stats().docs, 1)
        # $FPDB_TOKEN is the default token.
        os.environ["FPDB_TOKEN"] = self.RW
        try:
            self.assertEqual(Client(self.server.url).delete("a").deleted, 1)
        finally:
            del os.environ["FPDB_TOKEN"]
        self.assertNotIn(self.RW, repr(rw))


BIG_TEXT = (text(60, 2000) + "\n") * 900  # 11 MB: far more than the sockets' buffers


class TestEarlyRefusals(ServerTest):
    """A server that answers before it reads a body of many megabytes (a
    token that may not write, a body over --max-body, too many requests at
    once) is heard: its error, not a broken connection."""

    RO = "ro-token-0123456789abcdef"

    def server_args_for_test(self) -> List[str]:
        path = os.path.join(self.tmp, "tokens")
        with open(path, "w") as f:
            f.write("ro %s\nrw %s\n" % (self.RO, "rw-token-fedcba9876543210"))
        args = ["--tokens", path, "--max-body", "20000"]
        if self._testMethodName == "test_too_many_requests":
            args = ["--max-concurrent", "1"]
        return args

    def test_forbidden_and_unauthorized(self) -> None:
        self.assertGreater(len(BIG_TEXT), 11 << 20)
        ro = Client(self.server.url, self.RO, timeout=30)
        big = BIG_TEXT.encode("utf-8")
        calls = [
            ("add bytes", lambda c: c.add("x", big)),
            ("add str", lambda c: c.add("x", BIG_TEXT)),
            ("import bytes", lambda c: c.import_export(big[: 10 << 20])),
            ("import file", lambda c: c.import_export(io.BytesIO(big[: 10 << 20]))),
            ("add_many", lambda c: c.add_many([("x", BIG_TEXT)])),
        ]
        for name, call in calls:
            with self.assertRaises(Forbidden, msg=name) as cm:
                call(ro)
            self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"), name)
            with self.assertRaises(Unauthorized, msg=name):
                call(self.c)

    def test_too_large(self) -> None:
        rw = Client(self.server.url, "rw-token-fedcba9876543210", timeout=30)
        for body in (BIG_TEXT, BIG_TEXT.encode("utf-8")):
            with self.assertRaises(TooLarge) as cm:
                rw.add("x", body)
            self.assertEqual((cm.exception.status, cm.exception.code), (413, "too_large"))
        self.assertEqual(rw.stats().docs, 0)

    def test_too_many_requests(self) -> None:
        # A request that holds the server's one slot: its body never comes
        # (the server answers nothing until it does; a 429 comes at once).
        hold = socket.create_connection(("127.0.0.1", self.server.port), timeout=0.3)
        self.addCleanup(hold.close)
        hold.sendall(b"POST /v1/documents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
        with self.assertRaises(socket.timeout, msg="the held request was answered:\n" + self.server.log()):
            hold.recv(1)
        once = Client(self.server.url, timeout=30, retries=0)
        with self.assertRaises(TooManyRequests):
            once.stats()
        with self.assertRaises(TooManyRequests) as cm:
            once.add("x", BIG_TEXT)
        self.assertEqual(cm.exception.status, 429)
        with self.assertRaises(TooManyRequests):
            once.add("x", BIG_TEXT.encode("utf-8"))
        # Sent again (the server did nothing) once the slot is free.
        threading.Timer(0.5, hold.close).start()
        r = Client(self.server.url, timeout=30, retries=8, retry_wait=0.2).add("x", BIG_TEXT)
        self.assertTrue(r.stored)
        self.assertEqual(self.c.stats().docs, 1)


def near_duplicate_corpus(c: Client) -> Dict[str, List[str]]:
    """Stores three groups of near duplicates and three singletons; returns
    the groups by their first id."""
    groups = {}
    for g in range(3):
        base = text(200 + g)
        ids = ["g%d/0" % g]
        c.add(ids[0], base)
        for j in range(1, g + 2):
            ids.append("g%d/%d" % (g, j))
            c.add(ids[-1], edit(base, 0.005, 10 * g + j))  # 2 words of 400
        groups[ids[0]] = ids
    for i in range(3):
        c.add("single/%d" % i, text(300 + i))
    return groups


class TestStreams(ServerTest):
    def test_pairs(self) -> None:
        self.skip_unless_served("/v1/pairs")
        groups = near_duplicate_corpus(self.c)
        want = set()
        for ids in groups.values():
            want |= {tuple(sorted((a, b))) for a in ids for b in ids if a < b}
        stream = self.c.pairs(0.8)
        got = []
        with stream:
            for p in stream:
                self.assertIsInstance(p, Pair)
                self.assertGreaterEqual(p.similarity, 0.8)
                got.append(tuple(sorted((p.a, p.b))))
        self.assertEqual(sorted(got), sorted(want))  # each pair once
        # Nothing above 0.999 but nothing exact either.
        self.assertEqual(list(self.c.pairs(0.999)), [])
        # Stop early: the rest is not read, the connection is closed.
        s = self.c.pairs(0.8)
        first = next(s)
        self.assertIsInstance(first, Pair)
        s.close()
        self.assertEqual(list(s), [])
        with self.assertRaises(BadRequest):
            self.c.pairs(7)

    def test_clusters(self) -> None:
        self.skip_unless_served("/v1/clusters")
        groups = near_duplicate_corpus(self.c)
        cl = list(self.c.clusters(0.8))
        for x in cl:
            self.assertIsInstance(x, Cluster)
        self.assertEqual(sorted(sorted(x.ids) for x in cl), sorted(sorted(v) for v in groups.values()))
        self.assertEqual([x.size for x in cl], [4, 3, 2])  # largest first
        self.assertEqual([x.cluster for x in cl], [1, 2, 3])
        self.assertEqual(cl[0].pairs, 6)
        kept = list(self.c.clusters(0.8, keep="oldest"))
        for x in kept:
            first = min(x.ids, key=lambda i: int(i.split("/")[1]))
            self.assertEqual(x.keep, first)  # stored first
            self.assertEqual(sorted(x.drop), sorted(set(x.ids) - {first}))
        centered = list(self.c.clusters(0.8, centers=True, keep="longest"))
        self.assertEqual(sum(x.size for x in centered), 9)
        for x in centered:
            self.assertIn(x.center, x.ids)
            self.assertGreater(x.cohesion, 0)
        with self.assertRaises(BadRequest):
            self.c.clusters(0.8, keep="prettiest")
        # Without a keep policy: keep and drop only with centers, as the
        # Cluster's docstring says.
        for x in cl:
            self.assertEqual((x.keep, x.drop, x.center), ("", [], x.ids[0]), x)
        self.assertIn("centers=True", Cluster.__doc__.split("drop:")[1].split("center:")[0])
        for x in self.c.clusters(0.8, centers=True):
            self.assertEqual(x.keep, x.center, x)
            self.assertEqual(sorted(x.drop), sorted(set(x.ids) - {x.keep}), x)


class TestStreamCut(ServerTest):
    """A stream the server cuts off (--stream-timeout) raises; it is not
    read as a complete, shorter one."""

    server_args = ["--stream-timeout", "2s"]

    def test_pairs_cut_by_stream_timeout(self) -> None:
        self.skip_unless_served("/v1/pairs")
        base = text(50, 300)
        r = self.c.add_many((("n%d" % i, edit(base, 0.05, i)) for i in range(1500)), batch_size=500)
        self.assertEqual(r.stored, 1500)
        got = 0
        with self.assertRaises(ConnectionFailed) as cm:
            with self.c.pairs(0.5) as s:
                for _ in s:
                    got += 1
                    if got == 1:
                        time.sleep(3.5)  # the server's 2 s run out meanwhile
        self.assertIn("unexpected EOF", str(cm.exception))
        self.assertGreater(got, 0)
        self.assertLess(got, 1500 * 1499 // 2)


class TestExportImport(ServerTest):
    def test_export_then_import_into_another_server(self) -> None:
        self.c.add_many([("a", "the quick brown fox jumps over the lazy dog " * 5), ("b", "an entirely different text " * 9)])
        buf = io.BytesIO()
        self.assertEqual(self.c.export(buf), 2)
        lines = buf.getvalue().decode("utf-8").splitlines()
        header = json.loads(lines[0])
        self.assertEqual(header["docs"], 2)
        self.assertEqual(sorted(json.loads(l)["id"] for l in lines[1:3]), ["a", "b"])

        tmp2 = tempfile.mkdtemp(prefix="fpdb-pytest-")
        self.addCleanup(shutil.rmtree, tmp2, True)
        other = Server(tmp2)
        self.addCleanup(other.stop)
        c2 = Client(other.url, timeout=30)
        res = c2.import_export(io.BytesIO(buf.getvalue()))  # a file, streamed
        self.assertEqual(res.imported, 2)
        self.assertEqual(c2.get("a").size, self.c.get("a").size)
        self.assertEqual([m.id for m in c2.query("the quick brown fox jumps over the lazy dog " * 5)], ["a"])
        # Not into a database that holds documents: nothing changes. A body
        # of many megabytes, refused after its header, still gets the
        # server's answer (not a broken connection).
        with self.assertRaises(BadRequest) as cm:
            c2.import_export(buf.getvalue())
        self.assertIn("not empty", str(cm.exception))
        big = lines[0].encode("utf-8") + b"\n" + (lines[1].encode("utf-8") + b"\n") * 20000
        with self.assertRaises(BadRequest) as cm:
            c2.import_export(io.BytesIO(big))
        self.assertIn("not empty", str(cm.exception))
        self.assertEqual(len(c2), 2)
        with self.assertRaises(BadRequest):
            self.c.import_export(b"not an export\n")


class TestCompare(ServerTest):
    def test_compare_text_with_stored(self) -> None:
        old = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the old kitchen door " * 3
        new = old.replace("kitchen door", "kitchen window", 1)
        self.c.add("old", old)
        cmp = self.c.compare({"text": new, "name": "new.txt"}, {"id": "old"})
        self.assertIsInstance(cmp, fpdb.Comparison)
        self.assertTrue(0.5 < cmp.jaccard < 1, cmp)
        self.assertEqual(cmp.a["name"], "new.txt")
        self.assertTrue(cmp.b["stored"])
        self.assertTrue(cmp.passages, cmp)
        p = cmp.passages[0].a
        shared = new.encode("utf-8")[p.start : p.end].decode("utf-8")
        self.assertIn(shared[:30], old)
        page = self.c.compare(new, {"id": "old"}, html=True)
        self.assertIn("<html", page)
        with self.assertRaises(NotFound):
            self.c.compare(new, {"id": "missing"})
        self.assertFalse(cmp.more_passages)

    def test_compare_passage_limit(self) -> None:
        # One phrase repeated shares thousands of passages: the server
        # answers with the longest 1000 and says there are more.
        same = "same " * 3000
        cmp = self.c.compare(same, same, min_words=0)
        self.assertEqual(len(cmp.passages), 1000)
        self.assertTrue(cmp.more_passages)
        self.assertEqual(len(self.c.compare(same, same, min_words=0, passages=5).passages), 5)
        with self.assertRaises(BadRequest):
            self.c.compare(same, same, passages=1001)

    def test_compare_bytes_not_utf8(self) -> None:
        # A file's bytes are read as an upload is: a Latin-1 copy of a
        # stored text is the same text.
        text = "déjà vu naïve café crème brûlée à la carte garçon fiancée façade résumé " * 4
        self.c.add("fr", text)
        for a in (text.encode("latin-1"), {"bytes": text.encode("latin-1"), "name": "fr.txt"}):
            cmp = self.c.compare(a, {"id": "fr"})
            self.assertEqual(cmp.jaccard, 1, cmp)


class TestBatch(ServerTest):
    def test_add_many(self) -> None:
        self.skip_unless_served("/v1/batch")
        docs = [("t%d" % i, text(400 + i)) for i in range(5)]
        docs.append({"id": "d1", "text": text(410), "source": "dict"})
        docs.append(("d2", text(411), "tuple-source"))
        docs.append(("empty", "   "))  # no words: skipped
        docs.append(("t9", text(419).encode()))
        r = self.c.add_many(iter(docs), batch_size=3)
        self.assertEqual((r.stored, r.replaced, r.unchanged), (8, 0, 0), r)
        self.assertEqual([(s.line, s.id) for s in r.skipped], [(8, "empty")])
        self.assertTrue(r.skipped[0].error)
        self.assertEqual(self.c.stats().docs, 8)
        self.assertEqual(self.c.get("d1").source, "dict")
        self.assertEqual(self.c.get("d2").source, "tuple-source")
        self.assertEqual(self.c.query(text(403)).ids(), ["t3"])
        # Again: unchanged; with other texts: replaced.
        r = self.c.add_many(docs[:3])
        self.assertEqual((r.stored, r.unchanged), (0, 3))
        r = self.c.add_many([("t0", text(500)), ("new", text(501))], batch_size=1)
        self.assertEqual((r.stored, r.replaced, r.unchanged, r.skipped), (2, 1, 0, []))
        # Each skipped document says why, by name: an id given twice in one
        # request too.
        r = self.c.add_many([("twice", text(520)), ("twice", text(521)), ("blank", " ;; ")])
        self.assertEqual([(s.line, s.id, s.reason) for s in r.skipped],
                         [(2, "twice", "duplicate_in_batch"), (3, "blank", "no_words")])
        self.assertTrue(all(s.error for s in r.skipped))
        self.assertEqual(self.c.add_many([]).stored, 0)
        with self.assertRaises(TypeError):
            self.c.add_many(["just a string"])

    def test_add_many_checked(self) -> None:
        self.skip_unless_served("/v1/batch")
        base = text(700)
        docs = [
            ("a", base),
            ("b", text(701)),
            ("a-copy", edit(base, 0.02, 1)),  # near "a", in the same batch
            ("c", text(702)),
            ("b-copy", text(701)),  # an exact copy of "b", in the next batch
            ("empty", " ;; "),  # no words: skipped
        ]
        r = self.c.add_many(docs, batch_size=3, threshold=0.8, reject=True)
        self.assertEqual((r.stored, r.rejected), (3, 2), r)
        self.assertEqual([(s.line, s.id) for s in r.skipped], [(6, "empty")])
        self.assertEqual([(x.line, x.id, x.stored) for x in r.results],
                         [(1, "a", True), (2, "b", True), (3, "a-copy", False), (4, "c", True), (5, "b-copy", False)])
        self.assertEqual(r.results[2].matches.ids(), ["a"])
        self.assertTrue(r.results[4].matches[0].exact)
        self.assertEqual(len(self.c), 3)
        # Without reject, the copies are stored and their matches listed.
        r = self.c.add_many([("a2", base), ("a3", base)], threshold=0.9, limit=1)
        self.assertEqual((r.stored, r.rejected), (2, 0))
        self.assertEqual([x.matches.ids() for x in r.results], [["a"], ["a"]])
        with self.assertRaises(ValueError):
            self.c.add_many(docs, reject=True)
        with self.assertRaises(BadRequest):
            self.c.add_many(docs, threshold=1.5)

    def test_delete_many(self) -> None:
        self.skip_unless_served("/v1/delete")
        for i in range(4):
            self.c.add("p/%d" % i, text(600 + i))
            self.c.add("q/%d" % i, text(610 + i))
        r = self.c.delete_many(["p/0", "p/1", "nope"])
        self.assertEqual(r.deleted, 2)
        self.assertEqual(r.not_found, ["nope"])
        r = self.c.delete_many(prefix="q/", dry_run=True)
        self.assertEqual((r.deleted, r.dry_run), (4, True))
        self.assertEqual(len(self.c), 6)
        self.assertEqual(self.c.delete_many(prefix="q/").deleted, 4)
        self.assertEqual(self.c.delete_many(["p/2"], forget=True).deleted, 1)
        self.assertEqual(self.c.delete_many(older_than="720h").deleted, 0)
        import datetime

        with self.assertRaises(BadRequest):  # 0 would delete everything: refused
            self.c.delete_many(older_than=datetime.timedelta(0))
        time.sleep(0.01)
        self.assertEqual(self.c.delete_many(older_than=datetime.timedelta(milliseconds=1)).deleted, 1)
        self.assertEqual(len(self.c), 0)
        with self.assertRaises(ValueError):
            self.c.delete_many()
        with self.assertRaises(ValueError):
            self.c.delete_many(["a"], prefix="b")

    def test_delete_many_no_ids(self) -> None:
        # No ids delete nothing (the server refuses a request that names
        # nothing): the result of a call whose ids are not stored, without
        # a request (a client of no server answers the same).
        self.skip_unless_served("/v1/delete")
        self.c.add("kept", text(620))
        nobody = Client("http://127.0.0.1:%d" % free_port(), timeout=5, retries=0)
        for c in (self.c, nobody):
            for ids in ([], (), iter([])):
                r = c.delete_many(ids)
                self.assertIsInstance(r, fpdb.DeleteResult)
                self.assertEqual((r.deleted, r.not_found, r.dry_run), (0, [], False))
            r = c.delete_many([], dry_run=True)
            self.assertEqual((r.deleted, r.not_found, r.dry_run), (0, [], True))
            self.assertEqual(c.delete_many([], forget=True).raw, {"deleted": 0, "erased": 0, "redacted": 0})
        # As the server answers ids none of which is stored.
        for kw in ({}, {"dry_run": True}, {"forget": True}):
            r, some = self.c.delete_many([], **kw), self.c.delete_many(["nope"], **kw)  # type: ignore[arg-type]
            self.assertEqual(type(r), type(some))
            self.assertEqual((r.deleted, r.dry_run), (some.deleted, some.dry_run), kw)
            self.assertEqual(set(r.raw), set(some.raw) - {"not_found"}, kw)
        self.assertEqual(len(self.c), 1)


class TestReadme(ServerTest):
    def quick_start(self, path: Path) -> str:
        src = path.read_text(encoding="utf-8")
        m = re.search(r"```python\n(.*?)```", src, re.S)
        self.assertIsNotNone(m, "%s has no ```python block" % path)
        return m.group(1)

    def test_quick_start(self) -> None:
        code = self.quick_start(REPO / "README.md")
        self.assertEqual(len(code.strip().splitlines()), 5, code)
        self.assertEqual(code, self.quick_start(CLIENT_DIR / "README.md"), "the two READMEs' quick starts differ")
        env = dict(os.environ, PYTHONPATH="clients/python", FPDB_SERVER=self.server.url, PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run(
            [sys.executable, "-c", code],
            cwd=str(REPO),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=120,
        )
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        out = r.stdout.decode()
        m = re.fullmatch(r"\[Match\(id='([^']*)', similarity=([0-9.]+), .*\)\]\n", out)
        self.assertIsNotNone(m, out)
        self.assertEqual(m.group(1), "examples/corpus/2024-058-early-dyslexia-screening.txt")
        self.assertGreaterEqual(float(m.group(2)), 0.7)
        self.assertEqual(self.c.stats().docs, 1)


# -- without a server ----------------------------------------------------------


class _Slow(http.server.BaseHTTPRequestHandler):
    """Sends one NDJSON line, then waits for the test before the rest."""

    go_on: threading.Event

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        self.wfile.write(b'{"a":"x","b":"y","similarity":0.9,"hamming":25,"exact":false}\n')
        self.wfile.flush()
        if self.go_on.wait(20):
            self.wfile.write(b'{"a":"x","b":"z","similarity":0.8,"hamming":51,"exact":false}\n')
            self.wfile.write(b'{"error":{"code":"timeout","message":"stream took too long","request_id":"r1"}}\n')
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Fails the first ``fails`` requests with ``status`` (and Retry-After
    when ``retry_after`` is set), then answers; counts the requests."""

    fails = 0
    status = 503
    retry_after = ""
    calls = 0

    def _answer(self) -> None:
        cls = type(self)
        cls.calls += 1
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if cls.fails > 0:
            cls.fails -= 1
            code = "too_many_requests" if cls.status == 429 else "unavailable"
            body = json.dumps({"error": {"code": code, "message": "not now", "request_id": "r"}}).encode()
            self.send_response(cls.status)
            if cls.retry_after:
                self.send_header("Retry-After", cls.retry_after)
        elif self.path.startswith("/v1/stats"):
            body = b'{"docs": 7}'
            self.send_response(200)
        else:
            body = b'{"id": "a", "stored": true}'
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


class _Chunked(http.server.BaseHTTPRequestHandler):
    """Answers every GET with ``lines``, one chunk each (HTTP/1.1 chunked),
    then the last chunk when ``complete``, else drops the connection."""

    protocol_version = "HTTP/1.1"
    lines: List[bytes] = []
    complete = True

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in self.lines:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        if self.complete:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class _LateStart(http.server.BaseHTTPRequestHandler):
    """Answers every GET with one pair line after ``delay`` seconds of
    silence, as fpdb serve's pairs and clusters do while they work."""

    delay = 0.0

    def do_GET(self) -> None:  # noqa: N802
        time.sleep(self.delay)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        self.wfile.write(_PAIR)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class _NotFound(http.server.BaseHTTPRequestHandler):
    """Answers every request 404 with ``body`` (``content_type``), as
    another web server, or a proxy, at the client's URL would."""

    body = b"<html><body><h1>404 Not Found</h1></body></html>"
    content_type = "text/html"

    def _answer(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_DELETE = _answer  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


_PAIR = b'{"a":"x","b":"y","similarity":0.9,"hamming":25,"exact":false}\n'
_CLUSTER = b'{"cluster":1,"size":2,"pairs":1,"ids":["x","y"]}\n'
_EXPORT = [b'{"docs":1}\n', b'{"id":"x","fingerprint":"00"}\n']


class TestRetries(unittest.TestCase):
    def setUp(self) -> None:
        self.handler = type("Handler", (_Flaky,), {})
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.handler)
        self.t = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.t.start()
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]

    def tearDown(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()
        self.t.join(10)

    def attempt(self, status: int, fails: int, call: str, **kw: object) -> Optional[FpdbError]:
        self.handler.status, self.handler.fails, self.handler.calls = status, fails, 0
        c = Client(self.url, timeout=10, **{"retry_wait": 0.001, **kw})  # type: ignore[arg-type]
        try:
            if call == "stats":
                self.assertEqual(c.stats().docs, 7)
            else:
                self.assertTrue(c.add("a", "some words here").stored)
        except FpdbError as e:
            return e
        return None

    def test_what_is_sent_again(self) -> None:
        # (status, failures, call, options, calls, error class)
        cases = [
            (503, 3, "stats", {}, 4, None),
            (503, 4, "stats", {}, 4, Unavailable),
            (503, 1, "add", {}, 1, Unavailable),
            (429, 2, "add", {}, 3, None),
            (429, 1, "add", {"retries": 0}, 1, TooManyRequests),
            (503, 5, "stats", {"retries": 1}, 2, Unavailable),
        ]
        for status, fails, call, kw, calls, cls in cases:
            err = self.attempt(status, fails, call, **kw)
            name = "%d x%d %s %r" % (status, fails, call, kw)
            self.assertEqual(self.handler.calls, calls, name)
            if cls is None:
                self.assertIsNone(err, name)
            else:
                self.assertIs(type(err), cls, name)

    def test_large_body_to_a_server_without_expect(self) -> None:
        # An HTTP/1.0 server sends no 100 Continue: the body goes after a wait.
        self.handler.status, self.handler.fails, self.handler.calls = 429, 1, 0
        c = Client(self.url, timeout=10, retry_wait=0.001)
        t0 = time.monotonic()
        self.assertTrue(c.add("a", b"some words here " * 20000).stored)
        self.assertEqual(self.handler.calls, 2)
        self.assertLess(time.monotonic() - t0, 8)

    def test_retry_after(self) -> None:
        self.handler.retry_after = "1"
        t0 = time.monotonic()
        self.assertIsNone(self.attempt(503, 1, "stats"))
        self.assertGreaterEqual(time.monotonic() - t0, 1.0)
        err = self.attempt(503, 1, "stats", retries=0)
        self.assertIsInstance(err, Unavailable)
        assert err is not None
        self.assertEqual(err.retry_after, 1.0)

    def test_refused_connection_is_sent_again(self) -> None:
        port = free_port()
        elapsed = {}
        for retries in (0, 2):
            c = Client("http://127.0.0.1:%d" % port, timeout=5, retries=retries, retry_wait=1.0)
            t0 = time.monotonic()
            with self.assertRaises(ConnectionFailed):
                c.add("a", "some words here")
            elapsed[retries] = time.monotonic() - t0
        # Without retries: no wait at all. With 2: waits of at least 0.5
        # then 1 s (half of each, plus jitter).
        self.assertLess(elapsed[0], 0.5)
        self.assertGreaterEqual(elapsed[2], 1.5)

    def test_retry_after_header(self) -> None:
        for header, want in (("1", 1.0), ("7200", 3600.0), ("\u00b2", None), ("soon", None), (None, None)):
            e = error_from_response(503, b"", retry_after=header)
            self.assertEqual(e.retry_after, want, header)

    def test_arguments(self) -> None:
        for bad in ({"retries": -1}, {"retries": 1.5}, {"retries": True}, {"retry_wait": -1}, {"retry_wait": "1"}):
            with self.assertRaises(ValueError, msg=repr(bad)):
                Client(self.url, **bad)  # type: ignore[arg-type]


class TestWithoutServer(unittest.TestCase):
    def test_stream_yields_each_line_as_it_arrives(self) -> None:
        handler = type("Handler", (_Slow,), {"go_on": threading.Event()})
        srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        t.start()
        try:
            c = Client("http://127.0.0.1:%d" % srv.server_address[1], timeout=10)
            s = c.pairs(0.8)
            first = next(s)  # before the server sends the rest
            self.assertEqual((first.a, first.b, first.similarity), ("x", "y", 0.9))
            handler.go_on.set()
            self.assertEqual(next(s).b, "z")
            with self.assertRaises(Timeout) as cm:  # an error line ends the stream
                next(s)
            self.assertEqual(cm.exception.request_id, "r1")
            self.assertEqual(list(s), [])
        finally:
            handler.go_on.set()
            srv.shutdown()
            srv.server_close()
            t.join(10)

    def test_stream_waits_for_its_first_line(self) -> None:
        # A stream waits stream_timeout, not timeout, for its first line.
        handler = type("Handler", (_LateStart,), {"delay": 0.6})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        t.start()
        try:
            url = "http://127.0.0.1:%d" % srv.server_address[1]
            c = Client(url, timeout=0.2, retries=0)
            self.assertEqual([p.b for p in c.pairs(0.8)], ["y"])
            c = Client(url, timeout=10, retries=0, stream_timeout=0.2)
            with self.assertRaises(Timeout):
                list(c.pairs(0.8))
            for bad in (0, -1, True, "5"):
                with self.assertRaises(ValueError):
                    Client(url, stream_timeout=bad)  # type: ignore[arg-type]
        finally:
            srv.shutdown()
            srv.server_close()
            t.join(10)

    def chunked(self, lines: List[bytes], complete: bool) -> Client:
        handler = type("Handler", (_Chunked,), {"lines": lines, "complete": complete})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        t.start()

        def stop() -> None:
            srv.shutdown()
            srv.server_close()
            t.join(10)

        self.addCleanup(stop)
        return Client("http://127.0.0.1:%d" % srv.server_address[1], timeout=10, retries=0)

    def test_stream_complete_or_cut(self) -> None:
        for complete in (True, False):
            c = self.chunked([_PAIR] * 3, complete)
            s = c.pairs(0.8)
            got = []
            if complete:
                got = list(s)
            else:
                with self.assertRaises(ConnectionFailed, msg="pairs") as cm:
                    for p in s:
                        got.append(p)
                self.assertIn("unexpected EOF", str(cm.exception))
                self.assertEqual(list(s), [])  # closed
            self.assertEqual(len(got), 3, complete)
            self.assertEqual(got[0].similarity, 0.9)

            c = self.chunked([_CLUSTER] * 2, complete)
            if complete:
                self.assertEqual([x.ids for x in c.clusters(0.8)], [["x", "y"]] * 2)
            else:
                with self.assertRaises(ConnectionFailed, msg="clusters"):
                    list(c.clusters(0.8))

            c = self.chunked(_EXPORT, complete)
            out = io.BytesIO()
            if complete:
                self.assertEqual(c.export(out), 1)
            else:
                with self.assertRaises(ConnectionFailed, msg="export") as cm:
                    c.export(out)
                self.assertIn("unexpected EOF", str(cm.exception))
            self.assertEqual(out.getvalue(), b"".join(_EXPORT))
        # Cut within a line, within a chunk.
        c = self.chunked([_PAIR, _PAIR[:20]], False)
        with self.assertRaises(ConnectionFailed):
            list(c.pairs(0.8))

    def test_error_classes(self) -> None:
        def body(code: str) -> bytes:
            return json.dumps({"error": {"code": code, "message": "m " + code, "request_id": "rid"}}).encode()

        table = [
            (400, "bad_request", BadRequest),
            (401, "unauthorized", Unauthorized),
            (403, "forbidden", Forbidden),
            (404, "not_found", NotFound),
            (408, "timeout", Timeout),
            (504, "outcome_unknown", OutcomeUnknown),
            (413, "too_large", TooLarge),
            (429, "too_many_requests", TooManyRequests),
            (503, "unavailable", Unavailable),
            (500, "internal", ServerError),
        ]
        for status, code, cls in table:
            e = error_from_response(status, body(code))
            self.assertIs(type(e), cls, code)
            self.assertEqual((e.status, e.code, e.message, e.request_id), (status, code, "m " + code, "rid"))
            self.assertIsInstance(e, FpdbError)
            # Without the JSON body (a proxy's page) the status decides.
            e = error_from_response(status, b"<html>oops</html>", "hdr")
            self.assertIs(type(e), cls, status)
            self.assertEqual((e.code, e.request_id), (code, "hdr"))
            self.assertIn("oops", e.message)
        self.assertIs(type(error_from_response(502, b"")), ServerError)
        self.assertIs(type(error_from_response(418, b"")), BadRequest)
        self.assertIsInstance(Unavailable("x"), ServerError)

    def test_foreign_404_is_not_absent(self) -> None:
        """A 404 that is not the fpdb server's "document not found" (another
        web server's page, an fpdb error without the not_found reason) is
        no answer about the document: get, in and delete raise BadResponse,
        naming the URL."""
        bodies = [
            ("text/html", b"<html><body><h1>404 Not Found</h1></body></html>", "404 Not Found"),
            ("application/json", b'{"error":{"code":"not_found","message":"no such path: /v1/documents/x"}}', "no such path"),
            ("application/json", b'{"error":{"code":"not_found","message":"m","reason":"no_template"}}', "(m)"),
        ]
        for ctype, body, said in bodies:
            handler = type("Handler", (_NotFound,), {"body": body, "content_type": ctype})
            srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            t.start()
            try:
                url = "http://127.0.0.1:%d" % srv.server_address[1]
                c = Client(url, timeout=10, retries=0)
                for what, call in (("in", lambda: "x" in c), ("get", lambda: c.get("x")), ("delete", lambda: c.delete("x"))):
                    with self.assertRaises(BadResponse, msg="%s: %s" % (body, what)) as cm:
                        call()
                    self.assertNotIsInstance(cm.exception, NotFound)
                    self.assertEqual(cm.exception.status, 404)
                    self.assertIn(url + "/v1/documents/x answered 404", str(cm.exception))
                    self.assertIn(said, str(cm.exception))
                # Other calls keep the status's class.
                with self.assertRaises(NotFound):
                    c.stats()
            finally:
                srv.shutdown()
                srv.server_close()
                t.join(10)
        # The reason of the server's error body.
        e = error_from_response(404, b'{"error":{"code":"not_found","message":"m","reason":"not_found"}}')
        self.assertEqual((type(e), e.reason), (NotFound, "not_found"))
        self.assertEqual(error_from_response(404, b'{"error":{"code":"not_found","message":"m"}}').reason, "")
        self.assertEqual(error_from_response(404, b"<html></html>").reason, "")

    def test_document_source_base64(self) -> None:
        d = Document.from_json({"id": "x", "source": "a\ufffd", "source_base64": "Yf8="})
        self.assertEqual(d.source, "a\udcff")
        self.assertEqual(d.source.encode("utf-8", "surrogateescape"), b"a\xff")
        # Not base64: the source as the server wrote it.
        self.assertEqual(Document.from_json({"id": "x", "source": "a\ufffd", "source_base64": "*"}).source, "a\ufffd")
        self.assertEqual(Document.from_json({"id": "x", "source": "a"}).source, "a")

    def test_client_arguments(self) -> None:
        self.assertEqual(Client().url, fpdb.DEFAULT_URL)
        self.assertEqual(Client("127.0.0.1:9/").url, "http://127.0.0.1:9")
        os.environ["FPDB_URL"] = "http://127.0.0.2:7777"
        try:
            self.assertEqual(Client().url, "http://127.0.0.2:7777")
        finally:
            del os.environ["FPDB_URL"]

    def test_client_environment(self) -> None:
        """The variables the fpdb command line reads: $FPDB_SERVER, before
        $FPDB_URL (kept for compatibility), and $FPDB_TOKEN; an argument
        wins, an empty variable counts as unset."""
        saved = {k: os.environ.pop(k, None) for k in ("FPDB_SERVER", "FPDB_URL", "FPDB_TOKEN")}
        try:
            os.environ["FPDB_SERVER"] = "http://127.0.0.3:7701"
            self.assertEqual(Client().url, "http://127.0.0.3:7701")
            os.environ["FPDB_URL"] = "http://127.0.0.2:7777"
            self.assertEqual(Client().url, "http://127.0.0.3:7701")  # $FPDB_SERVER first
            self.assertEqual(Client("http://127.0.0.4:7702").url, "http://127.0.0.4:7702")
            os.environ["FPDB_SERVER"] = ""
            self.assertEqual(Client().url, "http://127.0.0.2:7777")
            del os.environ["FPDB_URL"]
            self.assertEqual(Client().url, fpdb.DEFAULT_URL)
            os.environ["FPDB_TOKEN"] = "a-token-of-the-command-line"
            self.assertEqual(Client().token, "a-token-of-the-command-line")
            self.assertEqual(Client(token="other").token, "other")
            os.environ["FPDB_TOKEN"] = ""
            self.assertIsNone(Client().token)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None)
                if v is not None:
                    os.environ[k] = v
        with self.assertRaises(ValueError):
            Client("ftp://127.0.0.1")


if __name__ == "__main__":
    unittest.main()
