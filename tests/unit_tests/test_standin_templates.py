"""The Ollama stand-in prompts any GGUF the way Ollama would: its own chat template.

System messages stay system turns, the GGUF's template (Jinja, in its metadata) shapes the
prompt, and an answer ends at the GGUF's own end-of-turn token. Served in-process on
loopback from two small files: the tiny Gemma-shaped model (no template: llama.cpp's
Gemma one) and a GGUF written here with a ChatML-like template and a stop token whose
text llama.cpp cannot guess, so only the file's metadata can make it a stop.
"""

from __future__ import annotations

import json
import threading
import urllib.request

import gguf
import numpy as np
import pytest
from pytest_socket import enable_socket, socket_allow_hosts

from graph.context import Context
from graph.llm import parse_grade, reply, yes_probability
from tests.ollama_stand_in import (
    Backend,
    Faults,
    StandIn,
    _to_llama_messages,
    gguf_metadata,
)
from tests.tiny_model import tiny_model_path

#: A ChatML-like template whose end-of-turn token is the file's own ``<|turn_done|>``,
#: with a default system turn when the conversation has none (as Qwen's has).
TEMPLATE = (
    "{%- if messages[0].role != 'system' -%}"
    "{{- '<|im_start|>system\\nYou are a test model.<|turn_done|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|turn_done|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
#: Gemma's ``<unused0>`` and ``<unused2>`` (control tokens) renamed into this file's turn markers.
RENAMED = {6: "<|im_start|>", 8: "<|turn_done|>"}
STOP = 8
NEWLINE, YES, NO = 107, 4443, 951  # "\n", "yes", "▁no" in Gemma's vocabulary
WIDTH = 128

CHAT = [
    {"role": "system", "content": "Answer yes or no."},
    {"role": "user", "content": "Is the sky blue?"},
]


def write_chatml_gguf(path, pooling: gguf.PoolingType | None = None) -> None:
    """A one-layer Gemma-shaped GGUF that answers "yes" and then its stop token.

    Its layers add nothing (zero weights), so each next token depends on the current one
    only: after "\\n" (where a generation prompt ends) "yes", after "yes" ``<|turn_done|>``,
    after anything else " no". A stand-in that ignored the stop token would go on " no no".
    ``pooling`` declares how its embeddings are pooled, as an embedding model's file does.
    """
    source = gguf_metadata(str(tiny_model_path()))
    writer = gguf.GGUFWriter(str(path), "gemma3")
    for name, value in source.items():
        if not name.startswith("tokenizer."):
            continue
        if name == "tokenizer.ggml.tokens":
            value = [RENAMED.get(i, t) for i, t in enumerate(value)]
        if name == "tokenizer.ggml.eos_token_id":
            value = STOP
        if isinstance(value, list):
            writer.add_array(name, value)
        elif isinstance(value, bool):
            writer.add_bool(name, value)
        elif isinstance(value, int):
            writer.add_uint32(name, value)
        else:
            writer.add_string(name, value)
    writer.add_chat_template(TEMPLATE)
    writer.add_context_length(2048)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(1)
    writer.add_feed_forward_length(WIDTH)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    writer.add_key_length(32)
    writer.add_value_length(32)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1e6)
    writer.add_sliding_window(512)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if pooling is not None:
        writer.add_pooling_type(pooling)
    vocab = len(source["tokenizer.ggml.tokens"])
    # Each token's embedding is one "state" direction: 0 for most tokens, its own for three.
    states = {NEWLINE: 1, YES: 2, STOP: 3}
    embeddings = np.zeros((vocab, WIDTH), np.float16)
    embeddings[:, 0] = 1
    for token, state in states.items():
        embeddings[token] = 0
        embeddings[token, state] = 1
    # The output row of a token points at the states it follows (large: a certain choice).
    output = np.zeros((vocab, WIDTH), np.float16)
    output[YES, 1] = 4
    output[STOP, 2] = 4
    output[NO, [0, 3]] = 4
    writer.add_tensor("token_embd.weight", embeddings)
    writer.add_tensor("output_norm.weight", np.ones(WIDTH, np.float32))
    writer.add_tensor("output.weight", output)
    for norm, size in [
        ("attn_norm", WIDTH),
        ("post_attention_norm", WIDTH),
        ("ffn_norm", WIDTH),
        ("post_ffw_norm", WIDTH),
        ("attn_q_norm", 32),
        ("attn_k_norm", 32),
    ]:
        writer.add_tensor(f"blk.0.{norm}.weight", np.ones(size, np.float32))
    for name, shape in [
        ("attn_q", (64, WIDTH)),
        ("attn_k", (32, WIDTH)),
        ("attn_v", (32, WIDTH)),
        ("attn_output", (WIDTH, 64)),
        ("ffn_gate", (WIDTH, WIDTH)),
        ("ffn_up", (WIDTH, WIDTH)),
        ("ffn_down", (WIDTH, WIDTH)),
    ]:
        writer.add_tensor(f"blk.0.{name}.weight", np.zeros(shape, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def serve(model_path: str):
    enable_socket()  # the server's own socket; the tests then allow loopback only
    backend = Backend(model_path)
    server = StandIn(
        ("127.0.0.1", 0), backend, ["standin"], ["standin-embed"], ["standin-vision"], Faults()
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    thread.join()
    server.server_close()


@pytest.fixture(scope="module")
def chatml(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "chatml.gguf"
    write_chatml_gguf(path)
    yield from serve(str(path))


@pytest.fixture(scope="module")
def gemma():
    yield from serve(str(tiny_model_path()))


@pytest.fixture(autouse=True)
def _loopback():
    enable_socket()
    socket_allow_hosts(["127.0.0.1"], allow_unix_socket=True)


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def prompt(url: str, messages: list[dict]) -> str:
    return post(url + "/_standin/prompt", {"model": "standin", "messages": messages})["prompt"]


def test_the_gguf_template_makes_the_prompt_with_the_system_turn_kept(chatml):
    assert prompt(chatml, CHAT) == (
        "<|im_start|>system\nAnswer yes or no.<|turn_done|>\n"
        "<|im_start|>user\nIs the sky blue?<|turn_done|>\n"
        "<|im_start|>assistant\n"
    )


def test_the_template_s_own_logic_runs(chatml):
    # No system message: the template adds its default one, and a history keeps its roles.
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Bye"},
    ]
    assert prompt(chatml, history) == (
        "<|im_start|>system\nYou are a test model.<|turn_done|>\n"
        "<|im_start|>user\nHi<|turn_done|>\n"
        "<|im_start|>assistant\nHello<|turn_done|>\n"
        "<|im_start|>user\nBye<|turn_done|>\n"
        "<|im_start|>assistant\n"
    )


@pytest.mark.parametrize("stream", [False, True])
def test_the_answer_ends_at_the_gguf_s_stop_token(chatml, stream):
    body = {"model": "standin", "messages": CHAT, "stream": stream, "options": {"num_predict": 8}}
    request = urllib.request.Request(
        chatml + "/api/chat",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        lines = [json.loads(line) for line in response.read().decode().splitlines() if line]
    content = "".join(line["message"]["content"] for line in lines)
    final = lines[-1]
    assert content == "yes"
    assert final["done"] and final["done_reason"] == "stop"


@pytest.mark.parametrize("stream", [False, True])
def test_token_log_probabilities_come_in_ollama_s_form_when_asked_for(chatml, stream):
    def chat(**extra) -> list[dict]:
        body = {"model": "standin", "messages": CHAT, "stream": stream, **extra}
        request = urllib.request.Request(
            chatml + "/api/chat",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return [json.loads(line) for line in response.read().decode().splitlines() if line]

    lines = chat(logprobs=True, top_logprobs=3)
    # Streamed, each line carries its own tokens' entries; not streamed, the one reply all.
    entries = [entry for line in lines for entry in line.get("logprobs") or []]
    content = "".join(line["message"]["content"] for line in lines)
    assert "".join(e["token"] for e in entries) == content == "yes"
    for entry in entries:
        assert set(entry) == {"token", "logprob", "top_logprobs"} and entry["logprob"] <= 0
        assert len(entry["top_logprobs"]) == 3
        assert {"token", "logprob"} == set(entry["top_logprobs"][0])
        assert entry["token"] in [t["token"] for t in entry["top_logprobs"]]
    assert not any("logprobs" in line for line in chat())


def test_the_answer_check_gets_the_log_probabilities_through_langchain_ollama(chatml):
    # The product's own path: the check's options, ChatOllama, the HTTP API, and the
    # reply's response_metadata, where yes_probability reads them.
    message = reply(Context(ollama_base_url=chatml, chat_model="standin"), "check", "Blue?")
    entries = message.response_metadata.get("logprobs") or []
    assert entries and "".join(e["token"] for e in entries).strip() == message.content
    # This test model's vocabulary spells the verdict "y" + "es": no probability to read,
    # so the verdict counts as it is (test_answer_check.py covers the reading). The reply
    # ends after the value (VERDICT_END: the server stops at '"}' and leaves it out).
    assert message.content == '{"score":"yes' and yes_probability(message) is None
    assert parse_grade(message.content) is True


def test_show_reports_the_gguf_template_and_stop_token(chatml):
    shown = post(chatml + "/api/show", {"model": "standin"})
    assert shown["template"] == TEMPLATE
    assert 'stop "<|turn_done|>"' in shown["parameters"].splitlines()
    assert shown["model_info"]["general.architecture"] == "gemma3"


def test_a_gguf_without_a_template_gets_gemma_s_with_the_system_text_first(gemma):
    # What the integration tests' tiny model (and the packaged Gemma) are given: Gemma has
    # no system role, so its template opens the first user turn with the system text.
    assert prompt(gemma, CHAT) == (
        "<start_of_turn>user\nAnswer yes or no.\n\nIs the sky blue?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    shown = post(gemma + "/api/show", {"model": "standin"})
    assert 'stop "<end_of_turn>"' in shown["parameters"].splitlines()


def test_ollama_messages_keep_their_roles():
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U", "images": ["aGk="]},
        {"role": "assistant", "content": "A"},
        {"role": "tool", "content": "T"},
    ]
    assert _to_llama_messages(messages, vision=True) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "[1 image(s) attached]\nU"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "T"},
    ]


def test_metadata_reader_reads_what_gguf_writes(tmp_path):
    path = tmp_path / "kv.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.chat_template", "{{ messages }} é")
    writer.add_uint32("tokenizer.ggml.eos_token_id", 7)
    writer.add_bool("tokenizer.ggml.add_bos_token", True)
    writer.add_float32("llama.rope.freq_base", 0.5)
    writer.add_uint64("general.big", 2**40)
    writer.add_int32("general.negative", -3)
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "a", "", "ü"])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5])
    writer.add_array("tokenizer.ggml.token_type", [3, 1])
    writer.add_tensor("t", np.zeros(4, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    metadata = gguf_metadata(str(path))
    assert metadata["general.architecture"] == "llama"
    assert metadata["tokenizer.chat_template"] == "{{ messages }} é"
    assert metadata["tokenizer.ggml.eos_token_id"] == 7
    assert metadata["tokenizer.ggml.add_bos_token"] is True
    assert metadata["llama.rope.freq_base"] == 0.5
    assert metadata["general.big"] == 2**40
    assert metadata["general.negative"] == -3
    assert metadata["tokenizer.ggml.tokens"] == ["<s>", "a", "", "ü"]
    assert metadata["tokenizer.ggml.scores"] == [0.0, -1.5]
    assert metadata["tokenizer.ggml.token_type"] == [3, 1]
