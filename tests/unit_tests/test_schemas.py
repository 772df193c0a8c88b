"""The graph's public shape, pinned: topology and the JSON schemas Studio and API clients see.

A deliberate change is accepted with ``make snapshots``
(``pytest tests/unit_tests/test_schemas.py --snapshot-update``), and the updated
``__snapshots__`` file is reviewed and committed with it.
"""

import pytest

from graph.builder import graph


def test_topology(snapshot):
    assert graph.get_graph().draw_mermaid(with_styles=False) == snapshot


@pytest.mark.parametrize("schema", ["input", "output", "context"])
def test_public_schema(schema, snapshot):
    assert getattr(graph, f"get_{schema}_jsonschema")() == snapshot
