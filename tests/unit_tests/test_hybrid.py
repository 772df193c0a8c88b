from dataclasses import replace

from langchain_core.embeddings import DeterministicFakeEmbedding

from graph.context import Context
from graph.index.catalog import Catalog
from graph.index.embedding import default_threshold, relevance_floor
from graph.index.ingest import load_notes
from graph.index.lexical import query_terms, reciprocal_rank_fusion
from graph.index.retrieval import search_notes


def test_reciprocal_rank_fusion():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]])
    assert fused[0] == "a"  # 1/61 + 1/62 beats c's 1/63 + 1/61
    assert set(fused) == {"a", "b", "c", "d"}
    assert fused.index("c") < fused.index("b")


def test_threshold_defaults_per_embedding_model():
    assert default_threshold("nomic-embed-text") == 0.5
    assert default_threshold("all-minilm:latest") == 0.3
    assert relevance_floor(Context(embedding_model="all-minilm")) == 0.3
    assert relevance_floor(Context(embedding_model="all-minilm", score_threshold=0.2)) == 0.2


def sources(ctx, emb, question, mode):
    found = search_notes(ctx, emb, question, k=3, mode=mode)
    return [c["source"] for c in found.relevant + found.near_misses]


def test_hybrid_finds_rare_words_and_never_goes_stale(ctx, notes_copy):
    # Random vectors: only the lexical side can find anything on purpose.
    emb = DeterministicFakeEmbedding(size=64)
    ctx = replace(ctx, score_threshold=0.0)
    load_notes(ctx, notes_copy, emb)
    assert "tech/zz.md" not in sources(ctx, emb, "quokkabyte firmware", "hybrid")

    (notes_copy / "tech" / "zz.md").write_text("# Firmware\n\nThe quokkabyte firmware is 4.2.\n")
    load_notes(ctx, notes_copy, emb)
    assert sources(ctx, emb, "quokkabyte firmware", "bm25")[0] == "tech/zz.md"
    assert "tech/zz.md" in sources(ctx, emb, "quokkabyte firmware", "hybrid")

    (notes_copy / "tech" / "zz.md").write_text("# Firmware\n\nNothing to see.\n")
    load_notes(ctx, notes_copy, emb)
    assert sources(ctx, emb, "quokkabyte", "bm25") == []  # the edit reached the lexical index

    (notes_copy / "tech" / "zz.md").unlink()
    load_notes(ctx, notes_copy, emb)
    assert "tech/zz.md" not in sources(ctx, emb, "firmware nothing", "hybrid")


def test_hybrid_scores_lexical_only_hits_by_cosine(loaded, models):
    result = search_notes(loaded, models.embedder, "wireguard 51820", k=3, mode="hybrid")
    chunks = result.relevant + result.near_misses
    assert chunks[0]["source"] == "tech/networking.md"
    assert all(0.0 <= c["score"] <= 1.0 for c in chunks)


def test_a_corpus_or_question_without_words_finds_nothing(tmp_path):
    class Stub:
        id = "stub"
        metadata = {"rag:generation": 1}

        def get(self, include, limit, offset):
            if offset:
                return {"ids": [], "documents": [], "metadatas": []}
            return {"ids": ["x"], "documents": ["a b c"], "metadatas": [{}]}

    catalog = Catalog.open(Context(chroma_persist_directory=str(tmp_path)), Stub())
    assert catalog.search("anything", 5) == []
    assert catalog.search("the, of and... ?!", 5) == []


def test_question_words_are_folded_like_the_index_and_quoted_safely():
    assert query_terms('Crème brûlée "NEAR" of the (x) AND* 4.2 ce_que') == [
        "creme",
        "brulee",
        "near",
        "ce",
        "que",
    ]


def test_the_words_questions_are_phrased_with_are_not_ranked():
    assert query_terms("How much is the monthly rent?") == ["much", "monthly", "rent"]
    assert query_terms("When can I plant the tomatoes?") == ["plant", "tomatoes"]
    assert query_terms("Who does what, and why?") == []
