"""The profiler breakdown's classification, on hand-made spans (no GPU needed)."""

from __future__ import annotations

import pytest

from trainlint.verify.profile import Span, breakdown, classify


def test_classify():
    assert classify(Span("Memcpy HtoD (Pageable -> Device)", 0, 1, True)) == "memcpy"
    assert classify(Span("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1, True)) == "communication"
    assert classify(Span("sm90_xmma_gemm_bf16bf16_bf16f32", 0, 1, True)) == "kernels"
    assert classify(Span("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
                         0, 1, False)) == "data loader"
    assert classify(Span("aten::add", 0, 1, False)) is None


def test_breakdown_shares_and_compute_ratio():
    spans = [
        Span("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", 0, 300, True),  # matmul
        Span("flash_fwd_kernel", 250, 400, True),  # attention, overlaps the matmul by 50 us
        Span("vectorized_elementwise_kernel", 400, 500, True),  # other kernel
        Span("Memcpy HtoD (Pinned -> Device)", 500, 550, True),
        Span("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 550, 650, True),
        Span("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 600, 800, False),
    ]
    b = breakdown(spans, wall_s=1000e-6, steps=2)
    s = b["shares"]
    assert s["kernels"] == pytest.approx(0.5)  # union 0..500
    assert s["memcpy"] == pytest.approx(0.05)
    assert s["communication"] == pytest.approx(0.1)
    assert s["data loader"] == pytest.approx(0.2)
    assert s["other"] == pytest.approx(0.2)  # 800..1000 uncovered
    assert b["compute_time_ratio"] == pytest.approx(0.4)  # union 0..400
    assert b["top_compute_kernels"][0]["name"].startswith("nvjet")
    assert b["device"] is True


def test_a_run_without_device_spans_reports_unknown_not_zero():
    spans = [Span("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300, False)]
    b = breakdown(spans, wall_s=1000e-6, steps=2)
    assert b["device"] is False and b["compute_time_ratio"] is None
    assert b["shares"] == {"kernels": None, "memcpy": None, "communication": None,
                           "data loader": pytest.approx(0.3), "other": pytest.approx(0.7)}
