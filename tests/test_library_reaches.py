"""Every place the app reaches into a library beyond its documented API, pinned to the version it was checked against.

Each test names the reach, the module of ours that makes it, and what in the library it relies on; when the library
changes, the test fails loudly with what to re-check (and only then is the pin moved). Issue 23, "fragile reaches".
"""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import version
from pathlib import Path

import pytest

PINNED = {"chainlit": "2.12.0", "python-socketio": "5.18.1", "python-engineio": "4.15.1"}


@pytest.mark.parametrize("package", sorted(PINNED))
def test_the_libraries_are_the_versions_these_reaches_were_checked_against(package):
    assert version(package) == PINNED[package], (
        f"{package} is now {version(package)} (was {PINNED[package]}): re-check every reach in this module "
        "(web/timestamps.py, web/door.py, web/auth.py, web/instance.py, web/datalayer.py, web/routes.py), then move "
        "the pin"
    )


def test_timestamps_chainlit_still_sleeps_and_stamps_through_module_globals():
    """web/timestamps.py swaps `time` and `utc_now` in chainlit.step and chainlit.message (no API for either)."""
    for name, owner in (("chainlit.step", "Step"), ("chainlit.message", "MessageBase")):
        module = importlib.import_module(name)
        source = inspect.getsource(module)
        assert "time.sleep(0.001)" in source, f"{name} no longer sleeps: web/timestamps.py may be obsolete"
        assert "utc_now()" in source and hasattr(module, "utc_now") and hasattr(module, "time"), name
        assert hasattr(module, owner)


def test_door_chainlits_socket_handlers_are_plain_module_functions_we_can_stand_in_front_of():
    """web/door.py registers our `client_message` / `edit_message` handlers (python-socketio keeps the last one per
    event) and hands a cleaned payload to Chainlit's own `chainlit.socket.message(sid, payload)`."""
    import chainlit.socket
    import engineio.async_socket
    from chainlit.server import sio

    from clincite.core.settings import load_settings
    from clincite.web.door import install

    assert list(inspect.signature(chainlit.socket.message).parameters) == ["sid", "payload"]
    assert "edit_message" in sio.handlers["/"] and "client_message" in sio.handlers["/"]
    assert "config.features.edit_message" not in inspect.getsource(chainlit.socket.edit_message), (
        "Chainlit's edit_message now checks the config itself: the door's refusal may be redundant"
    )
    door = install(sio, load_settings())
    assert sio.handlers["/"]["client_message"] == door.client_message
    assert sio.handlers["/"]["edit_message"] == door.edit_message
    assert "max_http_buffer_size" in inspect.getsource(engineio.async_socket)  # the frame limit we raise


def test_auth_chainlits_token_helpers_and_session_registry():
    """web/auth.py reads tokens with Chainlit's cookie helper, verifies them with its secret, wraps its /login, and
    finds live sockets in its session registry (to disconnect those of an ended login)."""
    from chainlit.auth.cookie import get_token_from_cookies
    from chainlit.auth.jwt import get_jwt_secret
    from chainlit.server import login
    from chainlit.session import WebsocketSession, ws_sessions_id

    assert callable(get_token_from_cookies) and callable(get_jwt_secret)
    assert list(inspect.signature(login).parameters) == ["request", "response", "form_data"]
    assert isinstance(ws_sessions_id, dict)
    assert {"socket_id", "token", "user"} <= set(inspect.signature(WebsocketSession.__init__).parameters)


def test_instance_chainlit_deletes_app_root_files_at_shutdown_and_reads_the_root_from_the_environment():
    """web/instance.py gives each process its own CHAINLIT_APP_ROOT because Chainlit keeps session files in
    APP_ROOT/.files and deletes that folder when it stops."""
    import chainlit.config
    import chainlit.server

    assert Path(chainlit.config.APP_ROOT) / ".files" == chainlit.config.FILES_DIRECTORY
    assert 'os.getenv("CHAINLIT_APP_ROOT"' in inspect.getsource(chainlit.config)
    assert "shutil.rmtree(FILES_DIRECTORY)" in inspect.getsource(chainlit.server.lifespan)
    assert "config.run.module_name = target" in inspect.getsource(importlib.import_module("chainlit.cli"))


def test_datalayer_the_methods_we_override_are_chainlits():
    """web/datalayer.py overrides SQLAlchemyDataLayer methods with the same signatures."""
    from chainlit.data.sql_alchemy import SQLAlchemyDataLayer

    from clincite.web.datalayer import ClinCiteDataLayer

    for name in ("create_step", "update_thread", "create_element", "upsert_feedback", "get_thread", "close"):
        ours = inspect.signature(getattr(ClinCiteDataLayer, name)).parameters
        theirs = inspect.signature(getattr(SQLAlchemyDataLayer, name)).parameters
        assert list(ours) == list(theirs), name
    assert "_get_user_id_by_thread" in vars(SQLAlchemyDataLayer)  # called by Chainlit's element code, ours too
    source = inspect.getsource(SQLAlchemyDataLayer.__init__)
    assert "self.engine" in source and "self.async_session" in source  # replaced with our engine


def test_routes_ours_stand_before_chainlits_for_the_paths_we_answer():
    """web/routes.py puts its routes first in Chainlit's FastAPI app (the SPA catch-all, and Chainlit's own
    /feedback, /login and sharing routes, would answer otherwise): Starlette tries routes in order."""
    from chainlit.server import app, router

    from clincite.web.routes import add_routes_before_the_spa

    add_routes_before_the_spa()
    top = app.router.routes
    chainlit_at = next(i for i, r in enumerate(top) if getattr(r, "original_router", None) is router)
    chainlits = {(r.path, m) for r in router.routes if hasattr(r, "methods") for m in r.methods}
    for path, method in (
        ("/feedback", "PUT"),
        ("/login", "POST"),
        ("/project/thread/share", "PUT"),
        ("/project/share/{thread_id}", "GET"),
    ):
        assert (path, method) in chainlits, f"Chainlit no longer has {method} {path}: is our route still needed?"
        ours = [i for i, r in enumerate(top) if getattr(r, "path", None) == path and method in (r.methods or ())]
        assert ours and ours[0] < chainlit_at, (path, ours, chainlit_at)
