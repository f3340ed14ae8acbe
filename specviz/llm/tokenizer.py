"""The model's own tokenizer: Gemma 3's SentencePiece vocabulary, read from the GGUF and run
by the `sentencepiece` library.

The GGUF keeps the pieces, their scores and their types (normal, control, user-defined,
byte); they become a SentencePiece ModelProto (a BPE model whose merges follow the scores,
byte fallback on, whitespace written as the marker ▁, no dummy prefix, no normalisation:
Gemma's own settings; the pieces made of spaces are written with ▁ as SentencePiece matches
them), so encoding and decoding are the library's, not ours. encode()
puts BOS first, as the model was trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from .gemma import field

SPACE = "\u2581"  # ▁, SentencePiece's whitespace marker
UNKNOWN = 2  # ModelProto.SentencePiece.Type.UNKNOWN (the GGUF types follow the same enum)


class Tokenizer:
    """encode(text) -> ids (BOS first), decode(ids) -> text, and each piece's display name."""

    def __init__(self, pieces: Sequence[str], scores: Sequence[float], types: Sequence[int],
                 *, bos: int, eos: int, unk: int, pad: int) -> None:
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2 as pb

        proto = pb.ModelProto()
        proto.trainer_spec.model_type = pb.TrainerSpec.BPE
        proto.trainer_spec.vocab_size = len(pieces)
        proto.trainer_spec.byte_fallback = True
        proto.trainer_spec.unk_id, proto.trainer_spec.bos_id = unk, bos
        proto.trainer_spec.eos_id, proto.trainer_spec.pad_id = eos, pad
        proto.normalizer_spec.name = "identity"
        proto.normalizer_spec.add_dummy_prefix = False
        proto.normalizer_spec.remove_extra_whitespaces = False
        proto.normalizer_spec.escape_whitespaces = True
        # The GGUF writes the whitespace-run pieces ("  ", "   ", ...) with plain spaces;
        # SentencePiece matches pieces after turning spaces into ▁, so they get ▁ too.
        pieces = [p.replace(" ", SPACE) for p in pieces]
        for i, (piece, score, kind) in enumerate(zip(pieces, scores, types, strict=True)):
            proto.pieces.add(piece=piece, score=float(score),
                             type=UNKNOWN if i == unk else int(kind))
        self._sp = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        self.V, self.bos, self.eos = len(pieces), bos, eos
        self.pieces = tuple(pieces)

    @classmethod
    def from_gguf(cls, reader) -> Tokenizer:
        """The tokenizer.ggml.* fields of an open GGUFReader."""
        f = reader.fields

        def strings(key: str) -> list[str]:
            return [bytes(f[key].parts[i]).decode("utf-8") for i in f[key].data]

        def numbers(key: str) -> list:
            return [f[key].parts[i][0].item() for i in f[key].data]

        return cls(strings("tokenizer.ggml.tokens"), numbers("tokenizer.ggml.scores"),
                   numbers("tokenizer.ggml.token_type"),
                   bos=int(field(reader, "tokenizer.ggml.bos_token_id")),
                   eos=int(field(reader, "tokenizer.ggml.eos_token_id")),
                   unk=int(field(reader, "tokenizer.ggml.unknown_token_id")),
                   pad=int(field(reader, "tokenizer.ggml.padding_token_id")))

    def encode(self, text: str, *, bos: bool = True) -> list[int]:
        ids = [int(t) for t in self._sp.encode(text)]
        return [self.bos] + ids if bos else ids

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ids (control tokens such as BOS write nothing)."""
        return self._sp.decode([int(t) for t in ids])

    @cached_property
    def shown(self) -> tuple[str, ...]:
        """Every piece as show() writes it (made once per tokenizer)."""
        return tuple(show(p) for p in self.pieces)


def show(piece: str) -> str:
    """A piece with ▁ as a visible space, line breaks as ⏎ and tabs as ⇥."""
    return piece.replace(SPACE, "␣").replace("\n", "⏎").replace("\t", "⇥")
