"""The original files of a shared KB in its catalogue database (PostgreSQL from Debian, started here): what
"打开原文" serves on every worker, whichever machine ingested the file."""

from __future__ import annotations

import hashlib
import os

import pytest
from servers import PostgresServer

from clincite.kb.catalogue import Catalogue
from clincite.kb.shared_originals import READ_BYTES, DatabaseOriginalStore

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def shared_catalogue():
    with PostgresServer() as pg:
        url = pg.create_database("originals")
        catalogue = Catalogue(url, schema="kb")
        yield catalogue
        catalogue.close()


def test_an_original_put_on_one_machine_is_read_back_whole_on_another(shared_catalogue):
    data = os.urandom(3 * READ_BYTES + 12345)  # more than one slice, not a whole number of them
    digest = DatabaseOriginalStore(shared_catalogue).put(data)
    assert digest == hashlib.sha256(data).hexdigest()
    elsewhere = Catalogue(shared_catalogue.engine.url.render_as_string(hide_password=False), schema="kb")
    store = DatabaseOriginalStore(elsewhere)  # another worker: its own connection to the same database
    assert store.exists(digest)
    with store.open(digest) as stream:
        assert stream.read() == data
    with store.open(digest) as stream:  # streamed a slice at a time, as the web route reads it
        pieces = iter(lambda: stream.read(65536), b"")
        assert b"".join(pieces) == data
    elsewhere.close()


def test_unknown_originals_are_not_found_and_unreferenced_ones_go(shared_catalogue):
    store = DatabaseOriginalStore(shared_catalogue)
    kept, dropped = store.put("保留的原文（演示）".encode()), store.put("删除的原文（演示）".encode())
    with pytest.raises(FileNotFoundError):
        store.open("0" * 64)
    with pytest.raises(FileNotFoundError):
        store.open("../../etc/passwd")
    store.put("保留的原文（演示）".encode())  # stored once
    assert store.keep_only({kept}) >= 1
    assert store.exists(kept) and not store.exists(dropped)
