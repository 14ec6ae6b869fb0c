"""Issue 30/31, second static-model pass: fit a token table so that a text's static vector matches
MiniLM's vector of the same text (model2vec's "tokenlearn"), on the corpus `tokenlearn_data` wrote.

Runs in a separate venv with torch (never the project's):

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.13.0 numpy tokenizers
    nice -n 10 /tmp/torchvenv/bin/python tests/search_eval/tokenlearn_train.py --dims 256 [--weights] \
        [--exclude dev-queries,blind-dev-queries,tuning-tools] --save /tmp/tokenlearn/student-256.npz

The student: a text's vector is unit(sum_t w_t E[t] / sum_t w_t @ P + b) over its WordPiece tokens
([CLS]/[SEP] dropped), E a 30,522 x d table, P a d x 384 map into MiniLM's space, b a bias, and w_t
either 1 or (--weights) a learned positive scalar per token. E starts as the old recipe's table
(`static_experiment.distil`: centred MiniLM token vectors on their first d principal axes, times
log(1 + id) unless --weights, where that factor starts w instead), P as those axes. The loss is
1 - cosine with the teacher (--tool-kl adds a listwise term over the corpus's tool texts); Adam
(sparse for the per-token parameters), early stopping on a 2%
validation split. It also prints, each epoch, top-1/3/5 by meaning alone on the development
queries over the tuning catalog, the tools embedded by the teacher (asymmetric) and by the student
(symmetric): a guide only (dev queries may be in the corpus), the search figures come from
`tokenlearn_experiment`.
"""

# pyright: reportMissingImports=false
# torch lives in a venv of its own (the docstring), never in the gateway's.

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

TOKENIZER = Path(__file__).resolve().parents[2] / "gateway" / "catalog" / "model" / "tokenizer.json"


def distil(matrix: np.ndarray, dimensions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The old recipe's rows (unweighted), the axes they were projected on, and the mean removed."""
    mean = matrix.mean(axis=0)
    _, _, axes = np.linalg.svd(matrix - mean, full_matrices=False)
    return (matrix - mean) @ axes[:dimensions].T, axes[:dimensions], mean


class Student(torch.nn.Module):
    def __init__(self, rows: np.ndarray, axes: np.ndarray, weights: np.ndarray, learn_weights: bool) -> None:
        super().__init__()
        self.table = torch.nn.Embedding.from_pretrained(
            torch.tensor(rows, dtype=torch.float32), freeze=False, sparse=True
        )
        self.log_weight = torch.nn.Embedding.from_pretrained(
            torch.tensor(np.log(weights)[:, None], dtype=torch.float32), freeze=not learn_weights, sparse=True
        )
        self.project = torch.nn.Parameter(torch.tensor(axes, dtype=torch.float32))
        self.bias = torch.nn.Parameter(torch.zeros(axes.shape[1]))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        weights = self.log_weight(ids).squeeze(1).exp()
        lengths = torch.diff(offsets, append=torch.tensor([len(ids)]))
        bag = torch.repeat_interleave(torch.arange(len(offsets)), lengths)
        summed = torch.zeros(len(offsets), self.table.embedding_dim).index_add_(
            0, bag, self.table(ids) * weights[:, None]
        )
        total = torch.zeros(len(offsets)).index_add_(0, bag, weights).clamp_min(1e-9)
        return torch.nn.functional.normalize((summed / total[:, None]) @ self.project + self.bias, dim=1)

    def export(self) -> dict[str, np.ndarray]:
        """The table with the weights folded in (E * w: the weighted mean's numerator), the weights
        (its denominator), P and b."""
        weights = self.log_weight.weight.detach().exp().numpy()[:, 0]
        return {
            "table": (self.table.weight.detach().numpy() * weights[:, None]).astype(np.float16),
            "weights": weights.astype(np.float32),
            "project": self.project.detach().numpy().astype(np.float32),
            "bias": self.bias.detach().numpy().astype(np.float32),
        }


def batches(tokens: list[list[int]], order: np.ndarray, size: int):
    for start in range(0, len(order), size):
        chosen = order[start : start + size]
        ids = [tokens[i] for i in chosen]
        lengths = np.array([len(x) for x in ids])
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        yield (
            chosen,
            torch.tensor(np.concatenate(ids), dtype=torch.long),
            torch.tensor(offsets, dtype=torch.long),
        )


def embed(model: Student, tokens: list[list[int]]) -> np.ndarray:
    with torch.no_grad():
        out = [
            model(ids, offsets).numpy() for _, ids, offsets in batches(tokens, np.arange(len(tokens)), 2048)
        ]
    return np.concatenate(out)


def probe(model: Student, tokenizer: Tokenizer, data: dict, tool_teacher: np.ndarray) -> str:
    names = [t["name"] for t in data["tools"]]
    cases = [q for q in data["queries"] if q["accept"]]

    def encode(texts: list[str]) -> list[list[int]]:
        return [e.ids[:254] or [100] for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    queries = embed(model, encode([q["query"] for q in cases]))
    tools = embed(model, encode([t["text"] for t in data["tools"]]))
    out = []
    for label, rows in (("asym", tool_teacher), ("sym", tools)):
        hits = np.zeros(3)
        for case, vector in zip(cases, queries, strict=True):
            order = np.argsort(-(rows @ vector))[:5]
            rank = next((r for r, i in enumerate(order, 1) if names[i] in case["accept"]), 99)
            hits += [rank <= 1, rank <= 3, rank <= 5]
        out.append(f"{label} " + "/".join(f"{h / len(cases):.1%}" for h in hits))
    return "  ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/tokenlearn"))
    parser.add_argument("--teacher", default="teacher", help="the teacher vectors' file (without .npy)")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--weights", action="store_true", help="learn a scalar weight per token")
    parser.add_argument("--exclude", default="", help="corpus sources left out, comma-separated")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument(
        "--tool-kl",
        type=float,
        default=0.0,
        help="weight of a listwise term: KL between the teacher's and the student's softmax "
        "over the corpus's tool texts (their teacher vectors), at temperature --tau",
    )
    parser.add_argument("--tau", type=float, default=0.05)
    parser.add_argument("--save", type=Path, required=True)
    args = parser.parse_args()
    torch.manual_seed(30)
    torch.set_num_threads(1)
    started = time.process_time()

    rows = [json.loads(line) for line in (args.data / "corpus.jsonl").read_text().splitlines()]
    teacher = np.load(args.data / f"{args.teacher}.npy", mmap_mode="r")
    excluded = set(filter(None, args.exclude.split(",")))
    keep = np.array([i for i, row in enumerate(rows) if row["source"] not in excluded])
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    encodings = tokenizer.encode_batch([rows[i]["text"] for i in keep], add_special_tokens=False)
    tokens = [e.ids[:254] or [100] for e in encodings]  # 256 with [CLS]/[SEP], as MiniLM truncates
    targets = torch.tensor(np.asarray(teacher[keep]), dtype=torch.float32)
    data = json.loads((args.data / "devprobe.json").read_text())
    by_text = {row["text"]: i for i, row in enumerate(rows)}
    tool_teacher = np.stack([teacher[by_text[t["text"]]] for t in data["tools"]])

    raw = np.load(args.data / "raw_tokens.npy")
    reduced, axes, _ = distil(raw, args.dims)
    rank_weight = np.log1p(np.arange(len(raw), dtype=np.float64)).clip(min=0.1)
    if args.weights:
        model = Student(reduced, axes, rank_weight, learn_weights=True)
    else:  # the old recipe's table as it was: the log-rank factor in the rows, a plain mean
        model = Student(reduced * rank_weight[:, None], axes, np.ones(len(raw)), learn_weights=False)

    tool_rows = torch.tensor(
        np.asarray(teacher[[i for i in keep if rows[i]["source"].endswith("-tools")]]), dtype=torch.float32
    )

    def loss_of(student: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = (1 - (student * target).sum(1)).mean()
        if args.tool_kl:
            logp = torch.log_softmax(student @ tool_rows.T / args.tau, dim=1)
            p_teacher = torch.softmax(target @ tool_rows.T / args.tau, dim=1)
            loss = loss + args.tool_kl * torch.nn.functional.kl_div(logp, p_teacher, reduction="batchmean")
        return loss

    rng = np.random.default_rng(30)
    order = rng.permutation(len(tokens))
    validation, training = order[: len(order) // 50], order[len(order) // 50 :]
    sparse = [p for p in (model.table.weight, model.log_weight.weight) if p.requires_grad]
    optimisers = [
        torch.optim.SparseAdam(sparse, lr=args.lr),
        torch.optim.Adam([model.project, model.bias], lr=args.lr / 10),
    ]

    def validation_loss() -> float:
        with torch.no_grad():
            losses = [
                (1 - (model(ids, offsets) * targets[chosen]).sum(1)).sum().item()
                for chosen, ids, offsets in batches(tokens, validation, 2048)
            ]
        return sum(losses) / len(validation)

    print(
        f"{len(tokens)} texts ({len(training)} training), dims {args.dims}, weights {args.weights}, "
        f"excluded {sorted(excluded)}, tool-kl {args.tool_kl} over {len(tool_rows)} tools, tau {args.tau}; "
        f"init: val loss {validation_loss():.4f}  {probe(model, tokenizer, data, tool_teacher)}",
        flush=True,
    )
    best, best_state, waited = float("inf"), None, 0
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for chosen, ids, offsets in batches(tokens, rng.permutation(training), args.batch):
            loss = loss_of(model(ids, offsets), targets[chosen])
            for optimiser in optimisers:
                optimiser.zero_grad()
            loss.backward()
            for optimiser in optimisers:
                optimiser.step()
            total += loss.item() * len(chosen)
        current = validation_loss()
        print(
            f"epoch {epoch}: train {total / len(training):.4f} val {current:.4f}  "
            f"{probe(model, tokenizer, data, tool_teacher)}  {time.process_time() - started:.0f} s CPU",
            flush=True,
        )
        if current < best - 1e-4:
            best, best_state, waited = current, model.export(), 0
        else:
            waited += 1
            if waited >= args.patience:
                break
    assert best_state is not None
    np.savez(args.save, **best_state)  # pyright: ignore[reportArgumentType]  (keyword arrays)
    print(f"saved {args.save} (val loss {best:.4f}); {time.process_time() - started:.0f} s of CPU")


if __name__ == "__main__":
    main()
