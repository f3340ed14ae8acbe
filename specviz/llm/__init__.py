"""The real model: Gemma 3 270M from its GGUF, run in f32 NumPy, with drafts of its own.

store (where the file is, the one loaded copy), gemma (shape and weights), forward (the
pass over a KV cache), tokenizer (SentencePiece from the GGUF's vocabulary). Imports only
specviz.core.
"""
