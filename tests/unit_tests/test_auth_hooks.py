"""The auth module's hooks (app/serving/auth.py), called as LangGraph calls them.

The served routes that reach them: test_serving_guard.py and test_closed_routes.py. Here the
factories themselves, so that a change to what a hook passes on or answers fails a test.
"""

from __future__ import annotations

import asyncio

import pytest
from langgraph_sdk import Auth

from app.serving import auth
from app.serving.boundary import CRONS_OFF, STORE_CLOSED, Refused


def test_a_hook_hands_the_request_value_to_its_check_and_passes_what_it_accepts():
    seen = []
    handler = auth._hook(seen.append, "Check a thing.")
    assert asyncio.run(handler(None, {"kwargs": {}})) is None
    assert seen == [{"kwargs": {}}]
    assert handler.__doc__ == "Check a thing."  # what LangGraph lists for the hook


def test_a_refused_check_answers_its_own_status_and_one_line_reason():
    def too_big(value):
        raise Refused(413, "config.metadata is over 65536 bytes")

    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        asyncio.run(auth._hook(too_big, "Check.")(None, {}))
    assert refused.value.status_code == 413
    assert refused.value.detail == "config.metadata is over 65536 bytes"
    assert refused.value.__cause__ is None  # the refusal, not a traceback of it


@pytest.mark.parametrize(("status", "detail"), [(403, CRONS_OFF), (404, STORE_CLOSED)])
def test_a_closed_route_refuses_anything_with_its_status_and_reason(status, detail):
    with pytest.raises(Refused) as refused:
        auth._closed(status, detail)({"anything": 1})
    assert (refused.value.status, refused.value.message) == (status, detail)
