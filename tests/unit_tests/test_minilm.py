"""The numpy all-MiniLM-L6-v2 encoder (tests/minilm.py) gives sentence-transformers' vectors.

The pinned values were computed with sentence-transformers 6.2.0 (torch 2.13, CPU):
``SentenceTransformer(get_model_path(), device="cpu").encode(TEXTS, normalize_embeddings=True)``.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

from tests.minilm import MiniLM

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("all_minilm_l6_v2", "tokenizers")),
    reason="all-MiniLM-L6-v2's files come with the eval extra",
)

COOKING = "Brown the onions slowly in butter before the stock goes in, and season at the end."
NETWORK = "The router hands out addresses by DHCP while the Pi-hole answers every DNS query."
SPORT = "Intervals on Tuesday, a long easy run on Sunday, and rest days after each race."
# 628 word pieces: [CLS], 126 of cooking, 140 of networking, 360 of sport, [SEP]. The model reads
# the first 256 ([CLS] and [SEP] included): most of the networking and none of the sport.
LONG = " ".join([COOKING] * 7 + [NETWORK] * 7 + [SPORT] * 20)

TEXTS = [
    "hello world",
    "Café naïve — 東京の天気は？ résumé, ¿qué tal? 🚀 Ünïcödé!",
    "How should I practise whiteboarding for interviews?",
    LONG,
]

# The first 16 of the 384 components of each text's vector.
# fmt: off
FIRST_16 = [
    [
        -0.034477, 0.031023, 0.006735, 0.026109, -0.039362, -0.160302, 0.066924, -0.006442,
        -0.047450, 0.014759, 0.070875, 0.055528, 0.019193, -0.026251, -0.010110, -0.026941,
    ],
    [
        0.038025, 0.058888, 0.083000, 0.012408, -0.024883, 0.044231, 0.068915, -0.015879,
        -0.079289, -0.083405, 0.074594, -0.085065, -0.031528, -0.037393, 0.007680, -0.064325,
    ],
    [
        0.059913, 0.050041, -0.030356, -0.030315, 0.026188, -0.032725, 0.008125, 0.013977,
        -0.066360, -0.056383, -0.101206, -0.058374, -0.043885, 0.063682, -0.038519, 0.045330,
    ],
    [
        -0.053401, -0.036476, 0.058712, 0.015187, -0.095337, -0.007563, -0.063790, -0.059080,
        0.062463, -0.035592, 0.024575, 0.081763, 0.015924, -0.099670, -0.048500, -0.040870,
    ],
]
# fmt: on

# Cosine similarity of each pair of texts.
COSINES = {
    (0, 1): 0.194596,
    (0, 2): 0.103711,
    (0, 3): 0.018462,
    (1, 2): 0.061036,
    (1, 3): -0.066297,
    (2, 3): -0.034011,
}

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return MiniLM()


@pytest.fixture(scope="module")
def vectors(model) -> list[list[float]]:
    return model.embed(TEXTS)


def test_each_vector_has_384_python_floats_and_unit_length(vectors):
    assert len(vectors) == len(TEXTS)
    for v in vectors:
        assert len(v) == 384
        assert all(type(x) is float for x in v)
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("i", range(len(TEXTS)))
def test_the_vectors_are_sentence_transformers_vectors(vectors, i):
    assert vectors[i][:16] == pytest.approx(FIRST_16[i], abs=TOLERANCE)


@pytest.mark.parametrize("pair", sorted(COSINES))
def test_the_similarities_are_sentence_transformers_similarities(vectors, pair):
    a, b = (vectors[i] for i in pair)
    assert sum(x * y for x, y in zip(a, b)) == pytest.approx(COSINES[pair], abs=TOLERANCE)


def test_a_text_gets_the_same_vector_alone_as_among_longer_ones(model, vectors):
    """Shorter texts of a batch are padded: the padding changes nothing."""
    alone = model.embed([TEXTS[0]])[0]
    assert alone == pytest.approx(vectors[0], abs=1e-6)


def test_what_follows_the_first_256_word_pieces_changes_nothing(model, vectors):
    longer = model.embed([" ".join([LONG] + [COOKING] * 10)])[0]
    assert longer == pytest.approx(vectors[3], abs=1e-6)


def test_no_texts_get_no_vectors(model):
    assert model.embed([]) == []
