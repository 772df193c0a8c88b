from dataclasses import replace

from langchain_core.tracers import langchain as tracers

from graph.builder import build_graph
from graph.tracing import run_config
from tests.fakes import FakeModels


def test_tracing_is_off_by_default_and_creates_no_tracer(loaded, monkeypatch):
    # An API key alone must not switch tracing on (sockets are disabled here as well).
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    monkeypatch.delenv("LANGCHAIN_TRACING_V2", raising=False)
    monkeypatch.setenv("LANGSMITH_API_KEY", "lsv2-not-used")
    created = []
    original = tracers.LangChainTracer.__init__

    def spy(self, *args, **kwargs):
        created.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(tracers.LangChainTracer, "__init__", spy)
    out = build_graph(models=FakeModels()).invoke(
        {"question": "sourdough starter feeding"}, run_config(loaded), context=loaded
    )
    assert out["answer"]
    assert created == []


def test_run_config_carries_the_settings(ctx):
    config = run_config(ctx, entry_point="test")
    assert config["run_name"] == "agentic_rag"
    assert config["metadata"]["chat_model"] == "llama3.1:8b"
    assert config["metadata"]["k"] == 5
    assert config["metadata"]["score_threshold"] == 0.1
    assert config["metadata"]["retrieval_mode"] == "hybrid"
    assert config["metadata"]["skip_question_words"] is True
    assert config["metadata"]["fusion_ties"] == "bm25"
    other = run_config(replace(ctx, skip_question_words=False, fusion_ties="vector"))
    assert (other["metadata"]["skip_question_words"], other["metadata"]["fusion_ties"]) == (
        False,
        "vector",
    )
