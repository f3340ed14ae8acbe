"""The verification kinds, one module each: chain (token by token), block (Sun et al.
2024) and tree (token trees, SpecInfer's multi-draft among them). Each module's kind
object holds the scalar round, the vectorised round and the exact laws (the parts listed
in kinds.base); a rule names its kind (Rule.kind) and kind_of(rule) is that object."""

from __future__ import annotations

from ..ruledefs import Rule
from .block import BLOCK
from .chain import CHAIN
from .tree import TREE

KINDS = {kind.name: kind for kind in (CHAIN, BLOCK, TREE)}


def kind_of(rule: Rule):
    """The kind a rule's rounds are played by."""
    return KINDS[rule.kind]
