"""Memory estimator against the worked figures of training-facts.md §1.

Tolerance: the ZeRO figures are quoted to 0.1 GB in the paper, so they are
checked after rounding to one decimal (decimal GB, 1e9 B, as the paper uses);
the activation and KV-cache examples are quoted as rounded GiB/MiB and are
checked to within 1% (pytest.approx rel=0.01). Bytes-per-parameter rules are exact.
"""
from __future__ import annotations

import pytest

from gpulint.resolve.memory import (GiB, Estimate, TrainingSetup, activation_bytes_per_layer, estimate_inference,
                            estimate_training, kv_cache_bytes)

PSI = 7_500_000_000  # ZeRO paper example
MiB = 1024 ** 2


def gb(n: int) -> float:
    return round(n / 1e9, 1)


# --- model states ----------------------------------------------------------------

@pytest.mark.parametrize("sharding, expected", [("none", 120.0), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9),
                                                ("fsdp_grad_op", 16.6), ("fsdp_full", 1.9)])
def test_zero_paper_7_5b_on_64_gpus(sharding, expected):
    est = estimate_training(TrainingSetup(params=PSI, precision="mixed", optimizer="adam", sharding=sharding, n_gpus=64))
    assert gb(est.total_bytes) == expected
    assert "activations" not in est.breakdown and est.lower_bound
    assert any("activations not counted" in a and "lower bound" in a for a in est.assumptions)


@pytest.mark.parametrize("precision, optimizer, accounting, per_param", [
    ("mixed", "adamw", "zero", 16),    # ZeRO K=12
    ("fp32", "adamw", "zero", 16),     # HF: 4 + 4 + 8
    ("mixed", "adamw", "hf", 18),      # HF model_memory_anatomy accounting
    ("mixed", "adam8bit", "hf", 12),   # bitsandbytes 8-bit Adam, HF accounting
    ("mixed", "sgd", "hf", 14),        # one momentum state
    ("bf16", "adamw", "zero", 8),      # pure bf16 params and states
    ("fp32", "sgd", "zero", 12),
])
def test_bytes_per_param(precision, optimizer, accounting, per_param):
    est = estimate_training(TrainingSetup(params=1_000_000_000, precision=precision, optimizer=optimizer,
                                          accounting=accounting))
    assert est.total_bytes == per_param * 1_000_000_000


def test_unknown_optimizer_is_a_lower_bound():
    est = estimate_training(TrainingSetup(params=10**9, optimizer="unknown"))
    assert est.total_bytes == 8 * 10**9 and est.lower_bound
    assert any("optimizer unknown" in a for a in est.assumptions)


def test_offload_optimizer_keeps_only_half_weights_and_grads():
    est = estimate_training(TrainingSetup(params=10**9, optimizer="adamw", offload_optimizer=True))
    assert est.total_bytes == 4 * 10**9 and set(est.breakdown) == {"weights", "gradients"}


def test_fsdp_hybrid_shards_within_node():
    est = estimate_training(TrainingSetup(params=PSI, sharding="fsdp_hybrid", n_gpus=64, gpus_per_node=8))
    assert est.total_bytes == pytest.approx(16 * PSI / 8, rel=1e-9)
    unknown = estimate_training(TrainingSetup(params=PSI, sharding="fsdp_hybrid", n_gpus=64))
    assert unknown.lower_bound and unknown.total_bytes == pytest.approx(16 * PSI / 64, rel=1e-9)


# --- LoRA / QLoRA ------------------------------------------------------------------

def test_lora_rule_of_thumb_2psi_plus_16_adapter():
    psi, adapter = 7_000_000_000, 20_000_000
    est = estimate_training(TrainingSetup(params=psi, trainable_params=adapter, precision="mixed", optimizer="adamw"))
    assert est.total_bytes == 2 * (psi - adapter) + 16 * adapter
    assert est.breakdown["frozen_weights"] == 2 * (psi - adapter)


def test_qlora_65b_fits_48gb_gpu_before_activations():
    # QLoRA: "finetune a 65B parameter model on a single 48GB GPU"; rule of thumb 0.55-0.6 B/param + adapters
    psi, adapter = 65_000_000_000, 100_000_000
    est = estimate_training(TrainingSetup(params=psi, trainable_params=adapter, quantized_bits=4, grad_checkpointing=True))
    assert 0.55 * psi < est.total_bytes < 48e9
    eight = estimate_training(TrainingSetup(params=psi, trainable_params=adapter, quantized_bits=8))
    assert eight.breakdown["frozen_weights"] == psi - adapter


def test_quantized_without_adapter_size_is_lower_bound():
    est = estimate_training(TrainingSetup(params=7_000_000_000, quantized_bits=4))
    assert est.lower_bound and est.breakdown == {"frozen_weights": int(0.55 * 7_000_000_000)}


# --- activations ---------------------------------------------------------------------

SEVEN_B = dict(params=6_738_415_616, seq_len=4096, micro_batch=1, layers=32, hidden=4096, heads=32)


def test_korthikanti_7b_example():
    per_layer = activation_bytes_per_layer(4096, 1, 4096, 32)
    assert 32 * per_layer / GiB == pytest.approx(97, rel=0.01)
    assert 32 * activation_bytes_per_layer(4096, 1, 4096, 32, "selective") / GiB == pytest.approx(17, rel=0.01)
    assert 32 * activation_bytes_per_layer(4096, 1, 4096, 32, "full") / GiB == pytest.approx(1, rel=0.01)


def test_activations_in_estimate_follow_checkpointing():
    off = estimate_training(TrainingSetup(**SEVEN_B, grad_checkpointing=False, flash_attention=False))
    on = estimate_training(TrainingSetup(**SEVEN_B, grad_checkpointing=True))
    assert off.activation_bytes / GiB == pytest.approx(97, rel=0.01)
    assert off.activation_bytes_with_checkpointing / GiB == pytest.approx(1, rel=0.01)
    assert off.breakdown["activations"] == off.activation_bytes and not off.lower_bound
    assert on.breakdown["activations"] == on.activation_bytes_with_checkpointing
    states = 16 * SEVEN_B["params"]
    assert off.total_bytes == states + off.activation_bytes
    flash = estimate_training(TrainingSetup(**SEVEN_B, grad_checkpointing=False, flash_attention=True))
    assert flash.breakdown["activations"] / GiB == pytest.approx(17, rel=0.01)


def test_unknown_checkpointing_counts_the_smaller_figure_and_says_so():
    est = estimate_training(TrainingSetup(**SEVEN_B))
    assert est.breakdown["activations"] == est.activation_bytes_with_checkpointing and est.lower_bound
    assert any("checkpointing unknown" in a for a in est.assumptions)


# --- inference -------------------------------------------------------------------------

def test_kv_cache_examples():
    assert kv_cache_bytes(32, 32, 128, 1) == pytest.approx(0.5 * MiB)            # Llama-2-7B per token
    assert kv_cache_bytes(32, 32, 128, 4096) / GiB == pytest.approx(2.0)           # one 4k sequence
    assert kv_cache_bytes(80, 8, 128, 1) / MiB == pytest.approx(0.31, rel=0.01)    # Llama-2-70B (GQA)
    assert kv_cache_bytes(80, 8, 128, 4096) / GiB == pytest.approx(1.25)
    assert kv_cache_bytes(32, 8, 128, 1) / MiB == pytest.approx(0.125)             # Llama-3-8B


def test_estimate_inference():
    est = estimate_inference(6_738_415_616, 2, kv={"layers": 32, "kv_heads": 32, "head_dim": 128, "seq_len": 4096, "batch": 4})
    assert est.breakdown["weights"] == 2 * 6_738_415_616
    assert est.breakdown["kv_cache"] == 8 * GiB
    assert isinstance(est, Estimate) and not est.lower_bound
    bare = estimate_inference(70_000_000_000, 0.5)
    assert bare.total_bytes == 35_000_000_000 and bare.lower_bound
    assert any("lower bound" in a for a in bare.assumptions)


# --- malformed input -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"params": 0}, {"params": "7B"}, {"params": True}, {"params": 10, "trainable_params": 20},
    {"params": 10, "precision": "int4"}, {"params": 10, "optimizer": "lion"}, {"params": 10, "sharding": "zero4"},
    {"params": 10, "n_gpus": 0}, {"params": 10, "quantized_bits": 3}, {"params": 10, "seq_len": -1},
    {"params": 10, "accounting": "other"},
])
def test_bad_setup_raises_value_error(kwargs):
    with pytest.raises(ValueError):
        TrainingSetup(**kwargs)


@pytest.mark.parametrize("args", [(0, 2), (10, 0), (10, "2"), (10, 2, {"layers": 32}), (10, 2, [1, 2])])
def test_bad_inference_args_raise_value_error(args):
    with pytest.raises(ValueError):
        estimate_inference(*args)


# -- corrections found on real repositories ------------------------------------------------------
def test_optimizer_offload_keeps_only_the_gradient_shard_on_the_gpu():
    base = dict(params=7_000_000_000, precision="mixed", optimizer="adamw", sharding="zero1", n_gpus=8)
    on_gpu = estimate_training(TrainingSetup(**base)).breakdown["gradients"]
    offloaded = estimate_training(TrainingSetup(**base, offload_optimizer=True))
    assert offloaded.breakdown["gradients"] == pytest.approx(on_gpu / 8)
    assert "optimizer_states" not in offloaded.breakdown and "master_weights" not in offloaded.breakdown


def test_conservative_zero_counts_at_least_what_deepspeeds_estimator_counts():
    p, n = 6_738_415_616, 8
    dims = dict(hidden=4096, vocab=32000, intermediate=11008)
    z3 = estimate_training(TrainingSetup(params=p, sharding="zero3", n_gpus=n, accounting="hf", **dims))
    largest = 32000 * 4096
    assert z3.total_bytes >= 4 * largest + 18 * p / n - 1
    assert "DeepSpeed's own estimator" in " ".join(z3.assumptions)
    z2 = estimate_training(TrainingSetup(params=p, sharding="zero2", n_gpus=n, accounting="hf", **dims))
    assert z2.total_bytes >= 4 * p + 16 * p / n - 1
    z2_off = estimate_training(TrainingSetup(params=p, sharding="zero2", n_gpus=n, accounting="hf", offload_optimizer=True, **dims))
    assert z2_off.total_bytes >= 2 * p - 1
    # the optimistic (ZeRO paper) reading is left as it was
    zero = estimate_training(TrainingSetup(params=p, sharding="zero3", n_gpus=n, **dims))
    assert "deepspeed_buffers" not in zero.breakdown
    assert zero.total_bytes == pytest.approx(16 * p / n, rel=1e-6)


def test_zero3_without_the_largest_layer_is_a_lower_bound():
    est = estimate_training(TrainingSetup(params=1_000_000_000, sharding="zero3", n_gpus=4, accounting="hf"))
    assert est.lower_bound and "largest layer unknown" in " ".join(est.assumptions)


def test_qlora_keeps_embeddings_and_lm_head_in_16_bit_when_counted_conservatively():
    setup = dict(params=6_738_415_616, trainable_params=20_000_000, quantized_bits=4, precision="mixed",
                 hidden=4096, vocab=32000)
    hf = estimate_training(TrainingSetup(**setup, accounting="hf"))
    zero = estimate_training(TrainingSetup(**setup))
    embed = 2 * 32000 * 4096
    assert hf.breakdown["embeddings_16bit"] == embed * 2
    assert hf.breakdown["frozen_weights"] == pytest.approx((6_738_415_616 - 20_000_000 - embed) * 0.55, rel=1e-6)
    assert "embeddings_16bit" not in zero.breakdown  # the optimistic reading keeps the smallest figure


def test_fp32_logits_of_a_large_vocabulary_are_counted_conservatively():
    dims = dict(params=8_030_261_248, seq_len=4096, micro_batch=4, layers=32, hidden=4096, heads=32, vocab=128256,
                grad_checkpointing=True)
    hf = estimate_training(TrainingSetup(**dims, accounting="hf"))
    assert hf.breakdown["logits_fp32"] == 4 * 4 * 4096 * 128256
    assert "logits_fp32" not in estimate_training(TrainingSetup(**dims)).breakdown
