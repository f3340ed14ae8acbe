"""The real model: Gemma 3 270M from its GGUF, run in f32 NumPy, with drafts of its own.

store (where the file is, the one loaded copy), gemma (shape and weights), forward (the
pass over a KV cache), blas (its matrix products, shaped for this machine's BLAS), machine
(this machine's bandwidth and matrix rates), tokenizer (SentencePiece from the GGUF's
vocabulary), pair (the model pair of the target and a draft), drafts (the draft kinds, one
registry; what a kind is: draftkind), decode and lossless (timed decodes, greedy and where
it parts). Imports only specviz.core.
"""
