from dataclasses import replace

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from graph.context import Context
from graph.index import lexical
from graph.index.catalog import Catalog
from graph.index.embedding import default_threshold, relevance_floor
from graph.index.ingest import load_notes
from graph.index.lexical import query_terms, reciprocal_rank_fusion
from graph.index.retrieval import search_notes
from graph.index.vectorstore import get_collection


def test_reciprocal_rank_fusion():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a", "d"]])
    assert fused[0] == "a"  # 1/61 + 1/62 beats c's 1/63 + 1/61
    assert set(fused) == {"a", "b", "c", "d"}
    assert fused.index("c") < fused.index("b")


def test_ties_between_ids_both_rankings_hold_follow_the_chosen_ranking():
    # a is first and second, b second and first: the same score.
    assert reciprocal_rank_fusion([["a", "b"], ["b", "a"]]) == ["a", "b"]
    assert reciprocal_rank_fusion([["a", "b"], ["b", "a"]], ties_by=1) == ["b", "a"]
    # x and y are each in one ranking only: first-seen order, whichever ranking decides.
    assert reciprocal_rank_fusion([["x", "a"], ["y", "b"]], ties_by=1) == ["x", "y", "a", "b"]


class MarkerEmbeddings(Embeddings):
    """The question sits nearer the chunk that says 'strain' than the one that says 'cleats'."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return [0.8, 0.6, 0.0]

    @staticmethod
    def _vector(text: str) -> list[float]:
        if "strain" in text:
            return [1.0, 0.0, 0.0]
        if "cleats" in text:
            return [0.0, 1.0, 0.0]
        return [0.0, 0.0, 1.0]


def test_a_tie_in_hybrid_goes_to_the_chunk_sharing_more_of_the_question(ctx, notes_copy):
    (notes_copy / "health").mkdir()
    (notes_copy / "health" / "physio.md").write_text(
        "# Physio\n\nThe calf strain came from hill repeats.\n"
    )
    (notes_copy / "sport").mkdir()
    (notes_copy / "sport" / "cycling.md").write_text(
        "# Cycling\n\nThe bike fitter moved the cleats back to ease the calf.\n"
    )
    emb = MarkerEmbeddings()
    load_notes(ctx, notes_copy, emb)
    question = "How do I avoid calf pain on the bike?"

    def order(mode):
        return [c["source"] for c in search_notes(ctx, emb, question, k=2, mode=mode).ranked]

    # Vector: physio, cycling; BM25: cycling (calf, bike), physio (calf): one fused score.
    assert order("vector") == ["health/physio.md", "sport/cycling.md"]
    assert order("bm25") == ["sport/cycling.md", "health/physio.md"]
    assert order("hybrid") == ["sport/cycling.md", "health/physio.md"]
    by_vector = replace(ctx, fusion_ties="vector")
    ranked = search_notes(by_vector, emb, question, k=2, mode="hybrid").ranked
    assert [c["source"] for c in ranked] == ["health/physio.md", "sport/cycling.md"]


def test_fusion_ties_names_a_ranking():
    with pytest.raises(ValueError, match="fusion_ties must be 'bm25' or 'vector', got 'both'"):
        Context(fusion_ties="both")


def test_threshold_defaults_per_embedding_model():
    assert default_threshold("nomic-embed-text") == 0.5
    assert default_threshold("all-minilm:latest") == 0.3
    assert relevance_floor(Context(embedding_model="all-minilm")) == 0.3
    assert relevance_floor(Context(embedding_model="all-minilm", score_threshold=0.2)) == 0.2


def test_a_german_question_has_a_lower_floor_where_one_was_fitted():
    german, english = "Wie ist der Code am Bootshaus?", "What is the code of the boat house?"
    assert default_threshold("all-minilm", german) == 0.25
    assert default_threshold("all-minilm:latest", german) == 0.25
    assert default_threshold("all-minilm", english) == 0.3
    assert default_threshold("all-minilm") == 0.3
    # No German floor was fitted for another model: its own holds.
    assert default_threshold("nomic-embed-text", german) == 0.5
    minilm = Context(embedding_model="all-minilm")
    assert relevance_floor(minilm, german) == 0.25 and relevance_floor(minilm, english) == 0.3
    # A floor the user set holds in every language.
    assert relevance_floor(replace(minilm, score_threshold=0.4), german) == 0.4


class ScoreEmbeddings(Embeddings):
    """Every question scores the one chunk 0.28: between all-minilm's German and English floors."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [0.28, 0.96, 0.0]


def test_a_german_question_keeps_a_chunk_an_english_one_does_not(ctx, notes_copy):
    ctx = replace(ctx, embedding_model="all-minilm", score_threshold=None)
    (notes_copy / "verein.md").write_text("# Ruderverein\n\nSchlüsselkasten am Tor, Code 3814.\n")
    emb = ScoreEmbeddings()
    load_notes(ctx, notes_copy, emb)
    german = search_notes(ctx, emb, "Wie ist der Code für den Schlüsselkasten am Bootshaus?")
    english = search_notes(ctx, emb, "What is the code of the key box at the boat house?")
    assert "verein.md" in [c["source"] for c in german.relevant]
    assert all(c["score"] == pytest.approx(0.28) for c in german.relevant + english.near_misses)
    assert not english.relevant and english.near_misses


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


class FarEmbeddings(Embeddings):
    """Every chunk is nearer the question than the one saying 'quokkabyte' (cosine 0.6, norm 2).

    No vector has length 1: a cosine computed here must divide by both lengths.
    """

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.2, 1.6, 0.0] if "quokkabyte" in t else [1.0, 0.0, 0.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [3.0, 0.0, 0.0]


def test_a_hit_only_bm25_found_is_kept_with_its_cosine_score(ctx, tmp_path):
    # 25 notes nearer the question fill the vector search's pool (20 for k=3): the note
    # naming the question's rare word is found by BM25 alone.
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(25):
        (notes / f"garden-{n}.md").write_text(f"# Garden {n}\n\nWater bed {n} on Sundays.\n")
    (notes / "router.md").write_text("# Router\n\nThe quokkabyte firmware is 4.2.\n")
    emb = FarEmbeddings()
    ctx = replace(ctx, score_threshold=0.5)
    load_notes(ctx, notes, emb)
    vector = search_notes(ctx, emb, "quokkabyte firmware", k=3, mode="vector").ranked
    assert "router.md" not in [c["source"] for c in vector]
    hybrid = search_notes(ctx, emb, "quokkabyte firmware", k=3, mode="hybrid")
    (router,) = [c for c in hybrid.ranked if c["source"] == "router.md"]
    assert router["score"] == 0.6 and router in hybrid.relevant
    assert router["heading"] == "Router"
    assert "The quokkabyte firmware is 4.2." in router["content"]


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
    ranked = query_terms("How much is the monthly rent?", skip_question_words=False)
    assert ranked == ["how", "much", "monthly", "rent"]


def test_a_german_questions_function_words_are_ranked_unless_switched_off(monkeypatch):
    question = "Wann habe ich die Nachzahlung überwiesen?"
    assert query_terms(question) == ["wann", "habe", "ich", "die", "nachzahlung", "uberwiesen"]
    monkeypatch.setattr(lexical, "GERMAN_STOPWORDS", True)
    assert query_terms(question) == ["nachzahlung", "uberwiesen"]


def test_a_german_questions_function_words_are_not_ranked(monkeypatch):
    monkeypatch.setattr(lexical, "GERMAN_STOPWORDS", True)
    question = "Wie viel Nebenkosten-Nachzahlung für 2025 habe ich am Ende überwiesen?"
    assert query_terms(question) == ["nebenkosten", "nachzahlung", "2025", "ende", "uberwiesen"]
    # the words questions are phrased with are ranked when that setting is off
    asked = "Wann habe ich die Nachzahlung überwiesen?"
    assert query_terms(asked) == ["nachzahlung", "uberwiesen"]
    assert query_terms(asked, skip_question_words=False) == ["wann", "nachzahlung", "uberwiesen"]
    # German stopwords that are English words too stay in an English question
    english = "Why did the basil die after the frost?"
    assert query_terms(english) == ["basil", "die", "after", "frost"]


def test_a_german_question_finds_the_note_with_its_term_not_the_one_with_its_grammar(
    ctx, tmp_path, monkeypatch
):
    monkeypatch.setattr(lexical, "GERMAN_STOPWORDS", True)
    notes = _notes(
        tmp_path,
        {
            "tagebuch": "Ich habe heute für die Katze eingekauft, und ich habe wie immer "
            "zu viel bezahlt. Ich bin müde, ich habe Hunger.",
            "wohnung": "Die Nachzahlung der Nebenkosten: 223,90 €.",
        },
    )
    emb = DeterministicFakeEmbedding(size=16)
    load_notes(ctx, notes, emb)
    question = "Wie viel Nachzahlung habe ich für die Wohnung bezahlt?"
    found = search_notes(ctx, emb, question, k=5, mode="bm25").ranked
    assert [c["source"] for c in found][:1] == ["wohnung.md"]


def test_question_words_are_ranked_when_the_setting_is_off(ctx, tmp_path):
    notes = _notes(
        tmp_path,
        {"faq": "What does it say? What does it mean?", "plan": "The plan is long."},
    )
    emb = DeterministicFakeEmbedding(size=16)
    load_notes(ctx, notes, emb)
    question = "What does the plan cover?"

    def found(context):
        return [c["source"] for c in search_notes(context, emb, question, k=5, mode="bm25").ranked]

    assert found(ctx) == ["plan.md"]
    assert "faq.md" in found(replace(ctx, skip_question_words=False))


class CosineByNote(Embeddings):
    """Each chunk at the cosine its word ``cNNN`` names: ``c050`` 0.5, ``c150`` -0.5."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            (word,) = [w for w in text.split() if w.startswith("c") and w[1:].isdigit()]
            number = int(word[1:])
            cosine = (100 - number) / 100 if number > 100 else number / 100
            vectors.append([cosine, (1 - cosine**2) ** 0.5, 0.0])
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


def _notes(tmp_path, texts: dict[str, str]):
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in texts.items():
        (notes / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    return notes


def test_the_floor_is_inclusive_and_three_near_misses_are_kept_best_first(ctx, tmp_path):
    # Cosines 0.9 and exactly the floor (0.5) are relevant; of the five below it, the best
    # three are the near misses. A chunk pointing away from the question scores 0, not < 0.
    cosines = {"at": "c050", "above": "c090", "b1": "c040", "b2": "c030", "b3": "c045"}
    cosines |= {"b4": "c010", "away": "c150"}  # c150: cosine -0.5
    notes = _notes(tmp_path, {name: f"{word} note {name}" for name, word in cosines.items()})
    emb = CosineByNote()
    ctx = replace(ctx, score_threshold=0.5)
    load_notes(ctx, notes, emb)
    result = search_notes(ctx, emb, "which note", k=7, mode="vector")
    assert [c["source"] for c in result.relevant] == ["above.md", "at.md"]
    assert [c["score"] for c in result.relevant] == [0.9, 0.5]
    assert [c["source"] for c in result.near_misses] == ["b3.md", "b1.md", "b2.md"]
    assert result.ranked[-1]["source"] == "away.md" and result.ranked[-1]["score"] == 0.0


def test_hybrid_ranks_from_pools_deeper_than_k(ctx, tmp_path):
    # 'both' is second in the vector ranking and second in BM25's: fused, it comes first,
    # which it can only do when each ranking looked past the k=1 it returns.
    notes = _notes(
        tmp_path,
        {
            "vector": "c090 nothing in common",
            "both": "c080 zebra yak",
            "lexical": "c010 zebra yak zebra yak zebra yak",
        }
        | {f"filler{n}": f"c0{20 + n} filler text {n}" for n in range(5)},
    )
    emb = CosineByNote()
    load_notes(ctx, notes, emb)
    hybrid = search_notes(ctx, emb, "zebra yak", k=1, mode="hybrid")
    assert [c["source"] for c in hybrid.ranked] == ["both.md"]


class OneCosine(Embeddings):
    """Every chunk at cosine 0.654321 from the question."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[0.654321, (1 - 0.654321**2) ** 0.5, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.0]


def test_a_found_chunk_carries_its_note_heading_tags_images_and_a_rounded_score(ctx, tmp_path):
    notes = tmp_path / "notes"
    (notes / "img").mkdir(parents=True)
    (notes / "img" / "rack.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (notes / "rack.md").write_text(
        "---\ntags: [homelab, network]\n---\n# Rack\n\n## Power\n\n"
        "The UPS holds 40 minutes.\n\n![front](img/rack.png)\n"
    )
    emb = OneCosine()
    load_notes(ctx, notes, emb)
    for mode in ("vector", "bm25", "hybrid"):
        (chunk,) = search_notes(ctx, emb, "How long does the UPS hold?", k=1, mode=mode).ranked
        assert chunk["source"] == "rack.md" and chunk["heading"] == "Rack > Power", mode
        assert "The UPS holds 40 minutes." in chunk["content"], mode
        assert chunk["tags"] == ["homelab", "network"], mode
        assert chunk["images"] == ["img/rack.png"], mode
        assert chunk["score"] == 0.6543, mode  # the cosine, to 4 places


def test_without_a_floor_of_its_own_the_collections_model_sets_it_and_the_size_is_told(
    ctx, tmp_path
):
    # The collection was embedded as nomic-embed-text (floor 0.5, where an unknown model's is
    # 0.3); the context names neither a floor nor a model, so the collection's model decides.
    notes = _notes(tmp_path, {"at": "c050 note", "below": "c049 note", "far": "c010 note"})
    emb = CosineByNote()
    nomic = replace(ctx, embedding_model="nomic-embed-text")
    load_notes(nomic, notes, emb)
    unset = replace(nomic, embedding_model="", score_threshold=None)
    result = search_notes(unset, emb, "which note", k=3, mode="vector")
    assert [c["source"] for c in result.relevant] == ["at.md"]
    assert [c["source"] for c in result.near_misses] == ["below.md", "far.md"]
    assert result.collection_size == 3
    empty = search_notes(replace(unset, collection_name="none"), emb, "which note", k=3)
    assert empty.collection_size == 0 and not empty.ranked


def test_each_mode_draws_its_vector_pool_as_documented(ctx, tmp_path, monkeypatch):
    # vector: exactly k; hybrid and bm25: four times k, and never fewer than 20 (so that a
    # chunk both rankings hold a little further down can still be fused to the top).
    import graph.index.retrieval as retrieval

    notes = _notes(tmp_path, {f"n{n}": f"c0{10 + n} note {n}" for n in range(3)})
    emb = CosineByNote()
    load_notes(ctx, notes, emb)
    pools: list[int] = []
    real = retrieval._vector_ranking

    def counted(context, vector, pool, where=None):
        pools.append(pool)
        return real(context, vector, pool, where)

    monkeypatch.setattr(retrieval, "_vector_ranking", counted)
    for k, mode in ((3, "vector"), (3, "hybrid"), (6, "hybrid"), (6, "bm25"), (7, "vector")):
        search_notes(ctx, emb, "which note", k=k, mode=mode)
    assert pools == [3, 20, 24, 24, 7]


class Recording:
    """A collection that records every ``get`` asked of it."""

    def __init__(self, inner):
        self.inner, self.gets = inner, []

    def get(self, **kwargs):
        self.gets.append(kwargs)
        return self.inner.get(**kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_the_filter_check_reads_one_id_and_an_empty_filter_names_the_size(
    ctx, tmp_path, monkeypatch
):
    import graph.index.retrieval as retrieval

    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(30):
        (notes / f"n{n}.md").write_text(
            f"---\ntags: [garden]\n---\n# N{n}\n\nc0{10 + n} water bed {n}.\n"
        )
    emb = CosineByNote()
    load_notes(ctx, notes, emb)
    recorded: list[Recording] = []

    def opened(context):
        recorded.append(Recording(get_collection(context)))
        return recorded[-1]

    monkeypatch.setattr(retrieval, "get_collection", opened)
    found = search_notes(replace(ctx, tags=["garden"]), emb, "water", k=3, mode="vector")
    assert len(found.ranked) == 3
    # whether the filter matches anything at all: one id, no documents, whatever the size
    assert recorded[0].gets[0] == {"where": {"tag:garden": True}, "limit": 1, "include": []}
    empty = search_notes(replace(ctx, tags=["kitchen"]), emb, "water", k=3, mode="vector")
    assert empty.filter_empty and empty.collection_size == 30 and not empty.ranked


class Unreachable(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        raise ConnectionError("refused")


def test_a_question_embedding_that_fails_names_the_server_and_the_collections_model(ctx, tmp_path):
    from graph.errors import OllamaUnreachable

    notes = _notes(tmp_path, {"a": "one note"})
    load_notes(ctx, notes, Unreachable())
    at = replace(ctx, ollama_base_url="http://127.0.0.1:1", embedding_model="")
    with pytest.raises(OllamaUnreachable, match=r"cannot reach Ollama at http://127\.0\.0\.1:1:"):
        search_notes(at, Unreachable(), "which note")


def test_a_score_is_clamped_into_zero_to_one():
    from graph.index.retrieval import _chunk

    made = {"source": "a.md", "heading": "A"}
    assert _chunk("text", made, 1.0000004)["score"] == 1.0
    assert _chunk("text", made, -0.2)["score"] == 0.0
    assert _chunk("text", made, 0.12345)["score"] == 0.1235


def test_a_collection_rag_load_did_not_make_is_searched_without_its_headings(ctx):
    # Chunks another tool wrote: no heading, no tags; found all the same, heading "".
    from graph.index.vectorstore import open_client

    client = open_client(ctx)
    collection = client.create_collection(ctx.collection_name, metadata={"hnsw:space": "cosine"})
    collection.add(
        ids=["a"], documents=["The UPS holds 40 minutes."], embeddings=[[1.0, 0.0, 0.0]],
        metadatas=[{"source": "rack.md"}],
    )  # fmt: skip
    (chunk,) = search_notes(
        ctx, OneCosine(), "How long does the UPS hold?", k=1, mode="vector"
    ).ranked
    assert (chunk["source"], chunk["heading"], chunk["content"]) == (
        "rack.md", "", "The UPS holds 40 minutes.",
    )  # fmt: skip
