"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, the default embedder, no torch.

:class:`MiniLMEmbedder` (:mod:`.embedder`) pools and normalizes what the model
(:mod:`.model`: the ONNX file, its checks, the shared session) computes; by default the
model runs in a process of its own (:mod:`.process`, its side :mod:`.child`, the frames
between them :mod:`.wire`), where one thread embeds the queries of many callers together
(:mod:`.query_lane`).
"""

from .embedder import MiniLMEmbedder

__all__ = ["MiniLMEmbedder"]
