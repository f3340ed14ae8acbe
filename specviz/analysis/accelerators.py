"""The accelerators the roofline prices, each from its datasheet, and the links between them.

An Accelerator is what one device offers a pass: peak dense MACs/s, memory bandwidth,
capacity. An Interconnect is what a tensor-parallel collective crosses: its bandwidth per
device and direction, its latency, each with its source. A device's first link is the one
tensor parallelism uses unless another is chosen.
"""

from __future__ import annotations

from dataclasses import dataclass

from .shape import FP8_COMPUTE


@dataclass(frozen=True)
class Interconnect:
    """A link between the devices of one server, as an all-reduce sees it: it moves
    bandwidth bytes/s per device and direction (times the peers for a full mesh, where a
    device has a link to each), and costs latency_s per collective plus hop_s per step
    of a ring (a torus without switches: TPU ICI)."""

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float
    source: str
    hop_s: float = 0.0
    mesh: bool = False  # a direct link to each peer (no switch): bandwidth grows with peers

    def bandwidth(self, devices: int) -> float:
        """Bytes/s one device moves in a collective over `devices` devices."""
        return self.bandwidth_bytes_per_s * (max(devices - 1, 1) if self.mesh else 1)


@dataclass(frozen=True)
class Accelerator:
    """An accelerator as the roofline sees it: peak dense MACs/s, memory bandwidth, capacity,
    and the links it has to its peers."""

    name: str
    peak_macs_per_s: float  # dense fp16/bf16 tensor-core MACs/s (= FLOP/s / 2)
    bandwidth_bytes_per_s: float  # HBM bytes/s
    source: str
    memory_bytes: float = 0.0  # device memory capacity
    peak_fp8_macs_per_s: float = 0.0  # dense fp8 MACs/s; 0 = no fp8 tensor cores
    links: tuple[Interconnect, ...] = ()  # to its peers; the first is the default
    peak_int8_macs_per_s: float = 0.0  # dense int8 MACs/s where it differs from fp8's (TPUs)

    @property
    def ridge(self) -> float:
        """MACs per byte above which a pass is compute-bound: peak / bandwidth."""
        return self.peak_macs_per_s / self.bandwidth_bytes_per_s

    def peak_for(self, compute: str) -> float:
        """Peak MACs/s for a pass computed in `compute`: int8 at the chip's int8 peak where it
        states one (TPUs), fp8 and int8 at the fp8 tensor cores' where the chip has them;
        every other type computes at the bf16 peak (int4 weights are widened to bf16 before
        the matmul)."""
        if compute == "int8" and self.peak_int8_macs_per_s > 0:
            return self.peak_int8_macs_per_s
        if compute in FP8_COMPUTE and self.peak_fp8_macs_per_s > 0:
            return self.peak_fp8_macs_per_s
        return self.peak_macs_per_s

    def link(self, name: str = "") -> Interconnect:
        """The link named (by its name or an unambiguous part of it), or the default one;
        ValueError names the links this accelerator has."""
        if not self.links:
            raise ValueError(f"{self.name} has no link to other devices")
        if not name:
            return self.links[0]
        hits = [x for x in self.links if name.lower() in x.name.lower()]
        if len(hits) != 1:
            raise ValueError(f"{self.name} has no interconnect {name!r}; it has "
                             f"{', '.join(x.name for x in self.links)}")
        return hits[0]


# --------------------------------------------------------------------------- the links
AR_H100_S = 8.5e-6  # an all-reduce's fixed time on NVLink: vLLM's custom all-reduce, 4 KB
# at TP 4 on H100 (8.5 us; 8.8 and 9.3 at TP 2 and 8), measured without CUDA graphs in
# SGLang PR #2904 (github.com/sgl-project/sglang/pull/2904)
AR_PCIE_S = 42e-6  # on PCIe: NCCL's all_reduce_perf at 8 bytes on 8 x RTX 4090, 42.1 us
# (github.com/NVIDIA/nccl/issues/1530)


def _nvlink(gen: str, gb_s: float, sheet: str, measured: bool = False) -> Interconnect:
    """NVLink through NVSwitch: the datasheet's bidirectional GB/s halved per direction."""
    how = ("measured on H100" if measured else
           "the H100's measurement, assumed for this GPU (none published here)")
    return Interconnect(f"NVLink {gen}", gb_s / 2 * 1e9, AR_H100_S,
                        f"{sheet}: {gb_s:,.0f} GB/s bidirectional per GPU, {gb_s / 2:,.0f} a "
                        f"direction; latency {AR_H100_S * 1e6:.1f} us an all-reduce, {how} "
                        "(vLLM's custom all-reduce at 4 KB, SGLang PR #2904)")


def _pcie(gen: int, gb_s: float) -> Interconnect:
    """PCIe x16 between the cards: the PCI-SIG rate per direction."""
    return Interconnect(f"PCIe Gen{gen}", gb_s * 1e9, AR_PCIE_S,
                        f"PCI Express {gen}.0 x16: {gb_s:.0f} GB/s a direction (PCI-SIG); "
                        f"latency {AR_PCIE_S * 1e6:.0f} us an all-reduce, NCCL's "
                        "all_reduce_perf at 8 bytes on 8 x RTX 4090 (NVIDIA/nccl issue #1530)")


def _ici(one_way_gb_s: float, sheet: str) -> Interconnect:
    """TPU ICI: one link's one-way bandwidth (a ring on a slice without wraparound uses one
    a direction) and about 1 us a hop (How to Scale Your Model, Austin et al. 2025, ch. 2)."""
    return Interconnect("ICI", one_way_gb_s * 1e9, 0.0,
                        f"{sheet}; {one_way_gb_s:.0f} GB/s one-way per link and about 1 us a "
                        "hop (How to Scale Your Model, Austin et al. 2025, jax-ml.github.io/"
                        "scaling-book, ch. 2: its TPU tables and worked latency)", hop_s=1e-6)


# --------------------------------------------------------------------------- the devices
def _gpu(name: str, tflops: float, fp8_tflops: float, tb_s: float, mib: float,
         source: str, links: tuple[Interconnect, ...] = ()) -> Accelerator:
    """An accelerator from datasheet units (dense TFLOP/s, TB/s) and its memory as the card
    reports it (MiB, 2^20 bytes: nvidia-smi's memory.total, rocm-smi's VRAM total), which is
    what a server can allocate from, not the datasheet's rounded GB."""
    return Accelerator(name, tflops * 1e12 / 2, tb_s * 1e12, source, mib * 2**20,
                       fp8_tflops * 1e12 / 2, links)


def _tpu(name: str, tflops: float, int8_tops: float, gb_s: float, memory_bytes: float,
         source: str, link: Interconnect) -> Accelerator:
    """A Cloud TPU chip from its page: bf16 TFLOP/s, int8 TOP/s (0 = as bf16), HBM GB/s and
    bytes in the page's unit (GiB or GB); no fp8 units (fp8 weights compute at the bf16
    peak)."""
    return Accelerator(name, tflops * 1e12 / 2, gb_s * 1e9, source, memory_bytes, 0.0, (link,),
                       int8_tops * 1e12 / 2)


H100_LINKS = (_nvlink("4", 900, "NVIDIA H100 datasheet (NVLink 900 GB/s)", measured=True),
              _pcie(5, 64))
ACCELERATORS: dict[str, Accelerator] = {a.name: a for a in (
    _gpu("A100 SXM 80GB", 312, 0, 2.039, 81_920,
         "NVIDIA A100 Tensor Core GPU datasheet: 312 TFLOPS dense FP16/BF16, 2,039 GB/s "
         "HBM2e, 80 GB (nvidia-smi: 81,920 MiB); no FP8",
         (_nvlink("3", 600, "NVIDIA A100 datasheet (NVLink 600 GB/s)"), _pcie(4, 32))),
    _gpu("H100 SXM", 989, 1979, 3.35, 81_559,
         "NVIDIA H100 Tensor Core GPU datasheet: 989 TFLOPS dense BF16, 1,979 dense FP8, "
         "3.35 TB/s HBM3, 80 GB (nvidia-smi: 81,559 MiB)", H100_LINKS),
    _gpu("H200 SXM", 989, 1979, 4.8, 143_771,
         "NVIDIA H200 Tensor Core GPU datasheet: 989 TFLOPS dense BF16, 1,979 dense FP8, "
         "4.8 TB/s HBM3e, 141 GB (nvidia-smi: 143,771 MiB)",
         (_nvlink("4", 900, "NVIDIA H200 datasheet (NVLink 900 GB/s)"), _pcie(5, 64))),
    _gpu("B200", 2250, 4500, 8.0, 183_359,
         "NVIDIA HGX B200 datasheet, per GPU (1/8 of the 8-GPU board, sparse figures "
         "halved): 2.25 PFLOPS dense BF16, 4.5 dense FP8, 8 TB/s HBM3e, 180 GB "
         "(nvidia-smi: 183,359 MiB)",
         (_nvlink("5", 1800, "NVIDIA HGX B200 datasheet (NVLink 1.8 TB/s per GPU)"),
          _pcie(5, 64))),
    _gpu("MI300X", 1307.4, 2614.9, 5.3, 196_288,
         "AMD Instinct MI300X data sheet: 1,307.4 TFLOPS dense FP16/BF16, 2,614.9 dense "
         "FP8, 5.3 TB/s HBM3, 192 GB (rocm-smi: 205,822,885,888 B = 196,288 MiB)",
         (Interconnect("Infinity Fabric", 64e9, AR_H100_S,
                       "AMD Instinct MI300X data sheet: 7 Infinity Fabric links of 128 GB/s "
                       "bidirectional, one to each peer of an 8-GPU platform, 64 GB/s a "
                       "direction; latency: the H100's NVLink all-reduce, assumed",
                       mesh=True), _pcie(5, 64))),
    _gpu("L4", 121, 242.5, 0.3, 23_034,
         "NVIDIA L4 Tensor Core GPU datasheet (sparse figures halved): 121 TFLOPS dense "
         "BF16, 242.5 dense FP8, 300 GB/s GDDR6, 24 GB (nvidia-smi with ECC on: "
         "23,034 MiB)", (_pcie(4, 32),)),
    _gpu("RTX 4090", 165.2, 330.3, 1.008, 24_564,
         "NVIDIA Ada Lovelace architecture whitepaper, GeForce RTX 4090: 165.2 TFLOPS dense "
         "BF16 and 330.3 dense FP8 (FP32 accumulate), 1,008 GB/s GDDR6X, 24 GB "
         "(nvidia-smi: 24,564 MiB)", (_pcie(4, 32),)),
    _tpu("TPU v4", 275, 275, 1200, 32 * 2**30,
         "Cloud TPU v4 page (cloud.google.com/tpu/docs/v4): 275 TFLOPS per chip (bf16 or "
         "int8), 32 GiB HBM2 at 1,200 GB/s; no FP8", _ici(45, "TPU v4: 3D torus of ICI links")),
    _tpu("TPU v5e", 197, 393, 819, 16e9,
         "Cloud TPU v5e page (cloud.google.com/tpu/docs/v5e): 197 TFLOPS bf16 and 393 TOPS "
         "int8 per chip, 16 GB HBM2 at 819 GB/s; no FP8",
         _ici(45, "TPU v5e: 400 GB/s bidirectional ICI per chip over 4 ports (its page)")),
    _tpu("TPU v5p", 459, 0, 2765, 95 * 2**30,
         "Cloud TPU v5p page (cloud.google.com/tpu/docs/v5p): 459 TFLOPS bf16 per chip, "
         "95 GiB HBM2e at 2,765 GB/s; no FP8, no int8 peak stated (int8 at the bf16 peak)",
         _ici(90, "TPU v5p: 4,800 Gbps ICI per chip (its page)")),
    _tpu("TPU v6e", 918, 1836, 1638, 32e9,
         "Cloud TPU v6e (Trillium) page (cloud.google.com/tpu/docs/v6e): 918 TFLOPS bf16 "
         "and 1,836 TOPS int8 per chip, 32 GB HBM at 1,638 GB/s; no FP8",
         _ici(90, "TPU v6e: 800 GB/s bidirectional ICI per chip over 4 ports (its page)")),
)}


def find_gpu(name: str) -> str:
    """An accelerator preset by its name or an unambiguous part of it ("H100" -> "H100 SXM")."""
    if name in ACCELERATORS:
        return name
    hits = [n for n in ACCELERATORS if name.lower().replace(" ", "") in
            n.lower().replace(" ", "")]
    if len(hits) != 1:
        raise ValueError(f"unknown accelerator {name!r}; choose one of {list(ACCELERATORS)}")
    return hits[0]
