"""The application layer: the ways people reach the graph.

``cli`` is the ``rag`` command line; ``serving`` is what ``langgraph dev`` serves over HTTP. It
imports the graph; the graph never imports it.
"""
