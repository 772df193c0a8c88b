"""Agentic RAG over markdown notes: LangGraph state machine, Ollama models, Chroma index.

Importing the package switches off the telemetry that unstructured and Chroma would
otherwise send: the product must never reach the network except the local Ollama/Chroma.
"""

import os

for _name, _value in (
    ("DO_NOT_TRACK", "1"),  # unstructured
    ("SCARF_NO_ANALYTICS", "true"),  # unstructured
    ("ANONYMIZED_TELEMETRY", "False"),  # chromadb
    ("HF_HUB_OFFLINE", "1"),  # never let a library reach a model hub
    ("UNSTRUCTURED_DISABLE_NOTICE", "1"),  # keep stdout for the answer
):
    os.environ.setdefault(_name, _value)
