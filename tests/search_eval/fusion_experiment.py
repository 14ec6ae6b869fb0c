"""Issue 30's third pass: more evidence fused beside the query's one cosine, on the development set.

    PYTHONPATH=$PWD .venv/bin/python -m tests.search_eval.fusion_experiment [--holdout]

Every variant starts from what search ranks by today (the fused score of every tool, with the
query's intent and a tool named exactly first) and changes one thing, scored on the same queries
in the same run:

- **tool views**: each tool also embedded as short texts (its name as words, the name with its
  server, its description's first sentence, name and first sentence, its parameters with their
  descriptions), mixed with or maxed against the one text search embeds;
- **server evidence**: each server's score for the query (its name and tool names embedded as one
  text; or the best, the best three or the mean of its tools' cosines; or its best lexical share)
  added to its tools' scores, and a server the query names as one (`_named_servers`) added to
  its tools;
- **query views**: the query's frame before a clause it introduces ("remember | that Alice ...")
  embedded too; the query inside a template ("function to ...");
- **learned fusion**: a linear scorer over those features, trained listwise (softmax over the
  catalog, the accepted tools as the target) by Adam, scored by five-fold cross-validation;
- **confidence**: the lexical share weighed by the share of the query the words matched;
- **hubness**: a tool's similarity to its nearest tools, or its mean cosine to the other
  queries, subtracted;
- **late interaction**: MiniLM's last-layer token states (an output added to the shipped graph),
  the query's tokens each matched to their most similar token of a tool's text (ColBERT's MaxSim),
  over the fused best 30.

Not kept (docs/search-experiments.md has the figures): none beats today's ranking by more than a few queries.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper
from tokenizers import Tokenizer

from gateway.catalog import Catalog
from gateway.catalog._intent import read_intent
from gateway.catalog._search import TUNED, WEAK_FUSED_SCORE, Hit, _index, _ranked, tool_text
from gateway.catalog._semantic import FUSION, MODEL_DIR, MODEL_FILES, Embedder, SemanticSearch, load_minilm
from gateway.catalog._signatures import first_sentence
from gateway.catalog._vocabulary import words
from gateway.catalog.evaluation import SearchCase, load_tool_snapshots
from gateway.shared import properties_of
from tests.search_eval.eval_set import CATALOG_DIRS, HOLDOUT_QUERIES, eval_cases

WEAK = WEAK_FUSED_SCORE  # the no-tool threshold on the fused score
SEMANTIC = 1 - FUSION.lexical  # the similarity's share of the fused score


class Recording:
    """MiniLM, keeping the vector of each query it compares with the catalog's tools."""

    def __init__(self, model: Embedder, tools: int) -> None:
        self.model, self.tools, self.queries = model, tools, list[np.ndarray]()
        self.texts: list[str] = []  # each query as the model was given it

    def encode(self, texts: Sequence[str]) -> Any:
        return self.model.encode(texts)

    def similarities(self, query: str, rows: Any) -> Sequence[float]:
        vector = self.model.encode([query])[0]
        if len(rows) == self.tools:  # not the product check's phrases
            self.queries.append(vector)
            self.texts.append(query)
        return (rows @ vector).tolist()


@dataclass
class Run:
    """What search did for each query: the fused score of every tool and what it was made of."""

    cases: list[SearchCase]
    fused: np.ndarray  # queries x tools, as search scored them
    lexical: np.ndarray  # each tool's lexical score as a share of the query's best
    coverage: np.ndarray  # the share of the query's concepts each tool matched
    similarity: np.ndarray  # each tool's cosine to the query as embedded
    query_vectors: np.ndarray
    query_texts: list[str]
    first: list[set[int]]  # tools named exactly: first whatever they score
    full_cover: list[set[int]]  # tools matching every concept (never weak when first)
    elsewhere: list[bool]  # the query names a product no server offers
    accept: list[set[int]]


def whole_query(catalog: Catalog, query: str) -> list[Hit]:
    """Every tool as the whole query ranks it, one embedding per query: search's own answer puts each
    step's best tool of a request of several steps near the top, with that step's score."""
    index, query = _index(catalog, TUNED), query.strip()
    return _ranked(catalog, index, query, index.corrected(query), None, len(catalog))


def capture(catalog: Catalog, lexical: Catalog | None, recording: Recording, cases: list[SearchCase]) -> Run:
    """Search each query over the whole catalog, by meaning and by words alone (without `lexical`,
    the lexical shares are left at 0: training the adapter needs only the fused scores)."""
    position = {entry.qualified: i for i, entry in enumerate(catalog.entries)}
    index = _index(catalog, TUNED)
    shape = (len(cases), len(catalog))
    fused, share, coverage = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    first: list[set[int]] = []
    full_cover: list[set[int]] = []
    elsewhere: list[bool] = []
    texts: list[str] = []
    for row, case in enumerate(cases):
        hits = whole_query(catalog, case.query)
        for hit in hits:
            fused[row, position[hit.entry.qualified]] = hit.score
            coverage[row, position[hit.entry.qualified]] = hit.coverage
        words_only = whole_query(lexical, case.query) if lexical is not None else []
        best = max((hit.score for hit in words_only), default=0.0)
        for hit in words_only:
            share[row, position[hit.entry.qualified]] = hit.score / best if best > 0 else 0.0
        exact = index.named.get(case.query.strip().removeprefix("tools."), set())
        first.append(set(exact))
        full_cover.append({position[h.entry.qualified] for h in hits if h.coverage >= 1.0} | exact)
        elsewhere.append(bool(hits) and hits[0].elsewhere is not None)
        intent = read_intent(case.query.strip(), index.known_words)
        texts.append(index.without_server_words(intent.embedded, index.concepts(intent)[1]))
    vectors = np.stack(recording.queries[-len(cases) :])
    return Run(
        cases=cases,
        fused=fused,
        lexical=share,
        coverage=coverage,
        similarity=vectors @ np.asarray(catalog_rows(catalog, recording)).T,
        query_vectors=vectors,
        query_texts=texts,
        first=first,
        full_cover=full_cover,
        elsewhere=elsewhere,
        accept=[{position[name] for name in case.accept if name in position} for case in cases],
    )


def catalog_rows(catalog: Catalog, model: Embedder) -> Any:
    """The rows search embeds (cached by the model: each text is embedded once)."""
    return model.encode([tool_text(entry) for entry in catalog.entries])


def figures(run: Run, score: np.ndarray, weak: float = WEAK) -> tuple[float, ...]:
    """Top-1/3/5 over answerable queries, the no-tool queries reported weak, answerable reported weak."""
    ranks: list[int | None] = []
    rejected: list[bool] = []
    weak_answerable = 0
    for row, case in enumerate(run.cases):
        order = sorted(np.argsort(-score[row], kind="stable")[:10], key=lambda i: i not in run.first[row])
        top = order[0]
        is_weak = top not in run.full_cover[row] and (run.elsewhere[row] or score[row, top] < weak)
        if not case.accept:
            rejected.append(is_weak)
            continue
        ranks.append(next((k + 1 for k, i in enumerate(order[:5]) if i in run.accept[row]), None))
        weak_answerable += is_weak

    def share(k: int) -> float:
        return 100 * sum(1 for r in ranks if r is not None and r <= k) / len(ranks)

    return (
        share(1),
        share(3),
        share(5),
        100 * sum(rejected) / len(rejected),
        100 * weak_answerable / len(ranks),
    )


def within(run: Run, score: np.ndarray, depths: Sequence[int] = (10, 20, 50)) -> str:
    """How often an accepted tool ranks within each depth (recall: what a re-ranker could reach)."""
    answerable = [row for row, case in enumerate(run.cases) if case.accept]
    shares: list[str] = []
    for depth in depths:
        found = sum(
            1 for row in answerable if run.accept[row] & set(np.argsort(-score[row])[:depth].tolist())
        )
        shares.append(f"{100 * found / len(answerable):.1f}% within {depth}")
    return ", ".join(shares)


def report(label: str, values: tuple[float, ...]) -> None:
    top1, top3, top5, none, weak = values
    print(f"{label:58} {top1:5.1f} {top3:5.1f} {top5:5.1f}   {none:5.1f}   {weak:5.1f}")


def parameters_text(properties: dict[str, Any]) -> str:
    """Each parameter's name as words, with its description's first sentence."""
    parts: list[str] = []
    for name, schema in properties.items():
        text = " ".join(words(name))
        description = schema.get("description") if isinstance(schema, dict) else None
        if isinstance(description, str) and description:
            text += ": " + first_sentence(description)
        parts.append(text)
    return "; ".join(parts)


def tool_views(catalog: Catalog) -> dict[str, list[str]]:
    """Short texts per tool, each a view of it the one long text may dilute."""
    entries = catalog.entries

    def name(entry: Any) -> str:
        return " ".join(words(entry.tool_name))

    return {
        "name": [name(e) for e in entries],
        "name (server)": [f"{name(e)} ({e.server_name})" for e in entries],
        "first sentence": [first_sentence(e.description) or name(e) for e in entries],
        "name. first sentence": [f"{name(e)}. {first_sentence(e.description)}" for e in entries],
        "parameters": [parameters_text(properties_of(e.input_schema)) or name(e) for e in entries],
    }


def per_server(
    values: np.ndarray, servers: np.ndarray, how: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """`how` over each server's tools' columns, spread back onto each of its tools."""
    out = np.zeros_like(values)
    for server in np.unique(servers):
        columns = servers == server
        out[:, columns] = how(values[:, columns])[:, None]
    return out


FRAME_MARKS = {"that", "so", "because", "before", "after", "when", "since", "until", "while", "whether", "if"}
PREPOSITIONS = {"of", "in", "on", "at", "from", "to", "with", "for", "by", "about", "into", "like"}


def frame(query: str) -> str | None:
    """The words before a clause the query introduces ("remember | that Alice likes tea"), if any."""
    tokens = query.split()
    for i, token in enumerate(tokens):
        word = re.sub(r"\W", "", token.lower())
        if word in FRAME_MARKS and i >= 1 and len(tokens) - i - 1 >= 2:
            if word == "that" and tokens[i - 1].lower() in PREPOSITIONS:  # "of that commit"
                continue
            return " ".join(tokens[:i])
    return None


def learned(
    run: Run, features: np.ndarray, folds: int = 5, steps: int = 300
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of a linear model over `features` (queries x tools x features), each answerable query
    scored by the model trained on the other folds; and the weights trained on all of them."""
    answerable = np.array([row for row, case in enumerate(run.cases) if case.accept])
    target = np.zeros(features.shape[:2])
    for row in answerable:
        target[row, list(run.accept[row])] = 1.0 / len(run.accept[row])

    def train(rows: np.ndarray) -> np.ndarray:
        weights = np.zeros(features.shape[2])
        weights[:2] = (FUSION.lexical * 10, SEMANTIC * 10)  # today's blend, at a softmax's scale
        moment, second = np.zeros_like(weights), np.zeros_like(weights)
        x = features[rows]
        for step in range(1, steps + 1):
            logits = x @ weights
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            gradient = np.einsum("qn,qnf->f", p - target[rows], x) / len(rows) + 1e-3 * weights
            moment = 0.9 * moment + 0.1 * gradient
            second = 0.999 * second + 0.001 * gradient**2
            weights -= 0.5 * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
        return weights

    shuffled = np.random.default_rng(0).permutation(answerable)
    scores = features @ train(answerable)
    everything = scores.copy()
    for held in np.array_split(shuffled, folds):
        kept = np.setdiff1d(answerable, held)
        scores[held] = features[held] @ train(kept)
    return scores, everything


def token_model(directory: Path) -> Path:
    """The shipped model with its last layer's token states as a second output."""
    model = onnx.load(str(MODEL_DIR / MODEL_FILES[0]))
    states = "encoder.layer.5.output.LayerNorm.out"
    model.graph.output.append(helper.make_tensor_value_info(states, TensorProto.FLOAT, None))
    path = directory / "tokens.onnx"
    onnx.save(model, str(path))
    return path


def token_states(path: Path) -> Callable[[str], np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(MODEL_DIR / MODEL_FILES[1]))
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)

    def states(text: str) -> np.ndarray:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        _, hidden = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        rows = np.asarray(hidden)[0][1:-1]  # without [CLS] and [SEP]
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    return states


@dataclass
class Setting:
    """One run's data and model, shared by every section."""

    run: Run
    catalog: Catalog
    model: Embedder
    servers: np.ndarray  # each tool's server

    def swap(self, similarity: np.ndarray) -> np.ndarray:
        """Today's ranking with the query's cosine replaced by `similarity`."""
        return self.run.fused + SEMANTIC * (similarity - self.run.similarity)

    def rows(self) -> np.ndarray:
        return np.asarray(catalog_rows(self.catalog, self.model))


def views_section(s: Setting) -> dict[str, np.ndarray]:
    """Each short view of the tools alone, mixed with and maxed against the tool's text."""
    q, similarity = s.run.query_vectors, s.run.similarity
    views: dict[str, np.ndarray] = {}
    for name, texts in tool_views(s.catalog).items():
        started = time.thread_time()
        views[name] = q @ np.asarray(s.model.encode(texts)).T
        cost = (time.thread_time() - started) / len(texts) * 1000
        report(f"view '{name}' alone ({cost:.1f} ms CPU a tool)", figures(s.run, s.swap(views[name])))
        for share in (0.2, 0.35, 0.5):
            mixed = (1 - share) * similarity + share * views[name]
            report(f"  mixed {share} with the tool's text", figures(s.run, s.swap(mixed)))
        report("  the better of the two", figures(s.run, s.swap(np.maximum(similarity, views[name]))))
    best = np.max(np.stack([similarity, *views.values()]), axis=0)
    print(f"  today's ranking: {within(s.run, s.run.fused)}")
    print(f"  the best of the text and every view: {within(s.run, s.swap(best))}")
    return views


def server_section(s: Setting) -> dict[str, np.ndarray]:
    """Each server's score for the query added to its tools'."""
    run, entries = s.run, s.catalog.entries
    names = sorted(set(s.servers.tolist()))
    texts = [
        f"{n}: " + ", ".join(" ".join(words(e.tool_name)) for e in entries if e.server_id == n) for n in names
    ]
    column = np.array([names.index(server) for server in s.servers])
    evidence = {
        "server text (name, tool names) embedded": (run.query_vectors @ np.asarray(s.model.encode(texts)).T)[
            :, column
        ],
        "server's best tool cosine": per_server(run.similarity, s.servers, lambda v: v.max(axis=1)),
        "server's best three tools' cosines": per_server(
            run.similarity, s.servers, lambda v: np.sort(v, axis=1)[:, -3:].mean(axis=1)
        ),
        "server's mean tool cosine": per_server(run.similarity, s.servers, lambda v: v.mean(axis=1)),
        "server's best lexical share": per_server(run.lexical, s.servers, lambda v: v.max(axis=1)),
    }
    for name, values in evidence.items():
        for share in (0.05, 0.1, 0.2, 0.3):
            threshold = WEAK + share * float(np.median(values.max(axis=1)))
            report(f"{name} +{share}", figures(run, run.fused + share * values, threshold))
    index = _index(s.catalog, TUNED)
    named = np.zeros_like(run.fused)
    for row, case in enumerate(run.cases):
        _, servers = index.concepts(read_intent(case.query.strip(), index.known_words))
        named[row, np.isin(s.servers, list(servers))] = 1.0
    for share in (0.05, 0.1, 0.2):
        report(f"a server the query names as one +{share}", figures(run, run.fused + share * named))
    return evidence


def query_section(s: Setting) -> None:
    """The query's frame embedded beside it; the query inside a template instead of alone."""
    run, rows = s.run, s.rows()
    frames = [frame(text) for text in run.query_texts]
    framed = np.stack([s.model.encode([f])[0] if f else run.query_vectors[i] for i, f in enumerate(frames)])
    by_frame = framed @ rows.T
    print(f"  ({sum(1 for f in frames if f)} queries have a frame)")
    report(
        "query frame: the better of it and the query",
        figures(run, s.swap(np.maximum(run.similarity, by_frame))),
    )
    for share in (0.3, 0.5):
        report(
            f"query frame mixed {share}",
            figures(run, s.swap((1 - share) * run.similarity + share * by_frame)),
        )
    for template in ("function to {}", "a tool to {}", "I want to {}"):
        templated = (
            np.stack([s.model.encode([template.format(text)])[0] for text in run.query_texts]) @ rows.T
        )
        for threshold in (0.41, 0.43):
            report(
                f"query as '{template}', weak under {threshold}", figures(run, s.swap(templated), threshold)
            )


def learned_section(s: Setting, views: dict[str, np.ndarray], evidence: dict[str, np.ndarray]) -> None:
    """A linear scorer over today's two features and the new ones, cross-validated."""
    run = s.run
    lean = (run.fused - FUSION.lexical * run.lexical) / SEMANTIC - run.similarity  # the query's intent
    base = np.stack([run.lexical, run.similarity + lean], axis=2)
    more = {
        "tool views": np.stack(list(views.values()), axis=2),
        "server": np.stack(list(evidence.values()), axis=2),
    }
    sets = {
        "lexical, cosine": base,
        "+ tool views": np.concatenate([base, more["tool views"]], axis=2),
        "+ server evidence": np.concatenate([base, more["server"]], axis=2),
        "+ both": np.concatenate([base, *more.values()], axis=2),
    }
    for name, features in sets.items():
        cross_validated, trained = learned(run, features)
        top1, top3, top5, *_ = figures(run, cross_validated, -np.inf)
        fit = figures(run, trained, -np.inf)[1]
        print(
            f"learned fusion, {name:42} {top1:5.1f} {top3:5.1f} {top5:5.1f}   (fit on all: {fit:.1f} top-3)"
        )


def confidence_section(s: Setting) -> None:
    """The lexical share weighed by how much of the query the words matched."""
    run = s.run
    best = run.coverage.max(axis=1, keepdims=True)
    for share in (0.2, 0.3, 0.4):
        for name, coverage in (("best", best), ("tool's", run.coverage)):
            rescored = run.fused + (share * coverage - FUSION.lexical) * run.lexical
            report(f"lexical share {share} x the {name} coverage", figures(run, rescored))


def hubness_section(s: Setting) -> None:
    """A tool close to everything pulled down by how close it is."""
    run, rows = s.run, s.rows()
    near = rows @ rows.T
    np.fill_diagonal(near, -1)
    for k in (5, 10):
        hub = np.sort(near, axis=1)[:, -k:].mean(axis=1)
        for share in (0.1, 0.2):
            threshold = WEAK - SEMANTIC * share * float(np.median(hub))
            rescored = s.swap(run.similarity - share * hub)
            report(f"hubness: nearest {k} tools' cosine -{share}", figures(run, rescored, threshold))
    others = (run.similarity.sum(axis=0)[None, :] - run.similarity) / (len(run.cases) - 1)
    for share in (0.2, 0.3):
        threshold = WEAK - SEMANTIC * share * float(np.median(others))
        rescored = s.swap(run.similarity - share * others)
        report(f"hubness: mean cosine to the other queries -{share}", figures(run, rescored, threshold))


def late_interaction_section(s: Setting) -> None:
    """MaxSim over the last layer's token states, added for the fused best 30."""
    run = s.run
    with tempfile.TemporaryDirectory() as directory:
        states = token_states(token_model(Path(directory)))
        tools = [states(tool_text(entry)) for entry in s.catalog.entries]
        maxsim = np.full_like(run.fused, np.nan)
        for row, text in enumerate(run.query_texts):
            query = states(text)
            for i in np.argsort(-run.fused[row])[:30]:
                maxsim[row, i] = (query @ tools[i].T).max(axis=1).mean()
    best = float(np.nanmedian(np.nanmax(maxsim, axis=1)))
    for share in (0.1, 0.3, 0.5):
        rescored = np.where(np.isnan(maxsim), run.fused - 10, run.fused + share * np.nan_to_num(maxsim))
        report(
            f"late interaction (MaxSim) over the best 30 +{share}",
            figures(run, rescored, WEAK + share * best),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--holdout", action="store_true", help="the held-out queries instead")
    args = parser.parse_args()
    cases = eval_cases(HOLDOUT_QUERIES) if args.holdout else eval_cases()
    tools = load_tool_snapshots(list(CATALOG_DIRS))
    model = load_minilm()
    recording = Recording(model, sum(len(t) for t in tools.values()))
    semantic = SemanticSearch(load=lambda: recording)
    catalog = Catalog(tools, semantic=semantic)
    semantic.load()
    run = capture(catalog, Catalog(tools), recording, cases)
    setting = Setting(run, catalog, model, np.array([entry.server_id for entry in catalog.entries]))
    print(
        f"{len(cases)} queries, {len(catalog)} tools{'':33} top-1 top-3 top-5   no-tool weak, answerable weak"
    )
    report("today's fused ranking", figures(run, run.fused))
    views = views_section(setting)
    evidence = server_section(setting)
    query_section(setting)
    if args.holdout:  # a scorer is trained on the development set, never on the held-out one
        print("learned fusion: trained and scored (cross-validated) on the development set only")
    else:
        learned_section(setting, views, evidence)
    confidence_section(setting)
    hubness_section(setting)
    late_interaction_section(setting)


if __name__ == "__main__":
    main()
