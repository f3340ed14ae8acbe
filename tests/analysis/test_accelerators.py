"""The TPUs beside the GPUs, each as its Cloud TPU page gives it; each preset's links; the
T5 configs Leviathan et al. priced, read as decoders with cross-attention."""

from __future__ import annotations

import pytest

from specviz.analysis import modelcfg
from specviz.analysis.accelerators import ACCELERATORS, find_gpu
from specviz.analysis.roofline import pass_times

TPUS = {  # name: (bf16 TFLOP/s, int8 TOP/s or 0, HBM GB/s, memory bytes, ICI one-way GB/s)
    "TPU v4": (275, 275, 1200, 32 * 2**30, 45),  # cloud.google.com/tpu/docs/v4
    "TPU v5e": (197, 393, 819, 16e9, 45),  # .../v5e
    "TPU v5p": (459, 0, 2765, 95 * 2**30, 90),  # .../v5p
    "TPU v6e": (918, 1836, 1638, 32e9, 90),  # .../v6e
}  # ICI: How to Scale Your Model (Austin et al. 2025), ch. 2, one-way per link


@pytest.mark.parametrize("name", list(TPUS))
def test_tpus_from_their_pages(name):
    tflops, int8, gb_s, mem, ici = TPUS[name]
    a = ACCELERATORS[name]
    assert a.peak_macs_per_s == tflops * 1e12 / 2 and a.bandwidth_bytes_per_s == gb_s * 1e9
    assert a.memory_bytes == mem and a.peak_fp8_macs_per_s == 0  # no fp8 units
    assert a.peak_for("int8") == (int8 or tflops) * 1e12 / 2
    assert a.peak_for("fp8") == a.peak_for("bf16")
    (link,) = a.links
    assert link.name == "ICI" and link.bandwidth(4) == ici * 1e9 and link.hop_s == 1e-6
    assert "cloud.google.com/tpu/docs" in a.source and "scaling-book" in link.source


def test_every_preset_names_its_links_and_their_sources():
    for a in ACCELERATORS.values():
        assert a.links and all(x.source and x.bandwidth_bytes_per_s > 0 for x in a.links)
    assert ACCELERATORS["H100 SXM"].link().bandwidth(8) == 450e9  # 900 GB/s bidirectional
    mi = ACCELERATORS["MI300X"].link()
    assert mi.bandwidth(2) == 64e9 and mi.bandwidth(8) == 7 * 64e9  # a link to each peer
    assert find_gpu("v6e") == "TPU v6e" and find_gpu("H100") == "H100 SXM"


T5 = {"model_type": "t5", "vocab_size": 32128, "d_kv": 64, "feed_forward_proj": "gated-gelu",
      "tie_word_embeddings": False}  # T5 v1.1 (google/t5-v1_1-*)
T5_SIZES = {"small": (512, 1024, 6, 8, 77e6), "base": (768, 2048, 12, 12, 250e6),
            "large": (1024, 2816, 16, 24, 800e6), "xxl": (4096, 10240, 64, 24, 11e9)}


def t5(name: str):
    d, ff, h, L, _ = T5_SIZES[name]
    return modelcfg.shape_from_config({**T5, "d_model": d, "d_ff": ff, "num_heads": h,
                                       "num_layers": L, "num_decoder_layers": L}, name=name)


@pytest.mark.parametrize("name", list(T5_SIZES))
def test_t5_by_hand_and_against_the_papers_sizes(name):
    """Encoder layer: attention 4 d q, GeGLU 3 d ff, 2 norms; decoder layer: that, and a
    cross-attention 4 d q with its norm; the shared embedding and the untied head; two final
    norms. Leviathan et al. give T5-small 77M, base 250M, large 800M, XXL 11B (their 3%:
    the relative-position tables, 32 x heads a stack, are not counted)."""
    d, ff, h, L, published = T5_SIZES[name]
    q = h * 64
    enc = 4 * d * q + 3 * d * ff + 2 * d
    dec = enc + 4 * d * q + d
    s = t5(name)
    assert s.params == L * enc + L * dec + 2 * 32128 * d + 2 * d
    assert s.params == pytest.approx(published, rel=0.03)
    # a decode step reads the decoder less the cross k and v, the head, one embedding row
    read = L * (dec - 2 * d * q - d) + 32128 * d + d + d
    assert s.weight_bytes(1, "bf16") == pytest.approx(2 * read, rel=1e-12)
    assert s.macs_per_token(0) == L * (dec - 2 * d * q - d - 2 * d) + 32128 * d


def test_t5_xxl_step_on_a_tpu_v4():
    s, v4 = t5("xxl"), ACCELERATORS["TPU v4"]
    kv = 24 * 2 * 4096 * 2 * 512  # K and V of 512 tokens of source and output, bf16
    want = (s.weight_bytes(1, "bf16") + kv) / 1.2e12
    assert float(pass_times(s, v4, 1, 1, context_len=512, dtype="bf16")) == pytest.approx(want)
