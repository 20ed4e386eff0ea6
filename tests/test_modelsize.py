"""Model sizes from names, HF configs and dims (training-facts.md §2)."""
from __future__ import annotations

import pytest

from gpulint.resolve.modelsize import ModelSize, from_dims, from_hf_config, from_name, known_models, _swiglu

LLAMA2_7B_CFG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32000,
    "tie_word_embeddings": False, "torch_dtype": "float16",
}


# --- table ---------------------------------------------------------------------------

def test_table_entries_have_source_and_consistent_dims():
    ids = set()
    for entry in known_models():
        assert entry["source"] and entry["params"] > 0, entry["id"]
        assert entry["id"].lower() not in ids
        ids.add(entry["id"].lower())
        dims = entry.get("dims") or {}
        if "kv_heads" in dims:  # SwiGLU decoders: the stored count must be the formula applied to the dims
            cfg = {"num_hidden_layers": dims["layers"], "hidden_size": dims["hidden"], "num_attention_heads": dims["heads"],
                   "num_key_value_heads": dims["kv_heads"], "intermediate_size": dims["intermediate"],
                   "vocab_size": dims["vocab"], "tie_word_embeddings": dims.get("tie_word_embeddings", False)}
            if "head_dim" in dims:
                cfg["head_dim"] = dims["head_dim"]
            if "experts" in dims:
                cfg.update(num_local_experts=dims["experts"], num_experts_per_tok=dims["experts_per_token"])
            mt = "qwen2" if entry["id"].startswith("Qwen/") else "mixtral" if "experts" in dims else "llama"
            got = _swiglu(cfg, mt, "test")
            assert got.params == entry["params"], entry["id"]
            assert got.active_params == entry.get("active_params"), entry["id"]


@pytest.mark.parametrize("name, params", [
    ("meta-llama/Llama-2-70b-hf", 68_976_648_192),
    ("META-LLAMA/LLAMA-2-70B-HF", 68_976_648_192),
    ("Llama-2-7b-chat-hf", 6_738_415_616),
    ("/mnt/models/Meta-Llama-3-8B-Instruct", 8_030_261_248),
    ("meta-llama/Llama-3.1-405B", 405_853_388_800),
    ("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512),
    ("gpt2", 124_439_808),
    ("gpt2-xl", 1_557_611_200),
    ("bert-base-uncased", 109_482_240),
    ("t5-small", 60_000_000),
    ("tiiuae/falcon-40b", 40_000_000_000),
    ("bigscience/bloom-7b1", 7_100_000_000),
    ("google/gemma-7b", 8_537_680_896),
])
def test_from_name_table(name, params):
    size = from_name(name)
    assert isinstance(size, ModelSize) and size.params == params
    assert "known model" in size.evidence and size.source


def test_from_name_moe():
    size = from_name("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert (size.params, size.active_params) == (46_702_792_704, 12_879_925_248)
    hint = from_name("my-org/mixtral-8x7b-sft-v2")
    assert hint.params == 46_702_792_704 and "mixture-of-experts" in hint.evidence
    assert from_name("someone/moe-8x3b") is None  # MoE total is not 8 x 3B, and the table does not know it


@pytest.mark.parametrize("name, params", [
    ("TheBloke/Llama-2-70B-GPTQ", 70_000_000_000),
    ("./checkpoints/llama-7B-sft", 7_000_000_000),
    ("org/Qwen2-1.5b-custom", 1_500_000_000),
    ("acme/tiny-350m", 350_000_000),
    ("deepseek-ai/deepseek-coder-6.7b-base", 6_700_000_000),
])
def test_from_name_size_hint(name, params):
    size = from_name(name)
    assert size.params == params and size.active_params is None
    assert "size hint" in size.evidence


@pytest.mark.parametrize("name", [
    "qwen2", "v2", "model-2024", "e5-large-v2", "llama", "my-7b-distilled-from-70b", "ckpt/step-3",
    "", "   ", None, 7, "stable-diffusion-v1-5", "t5-efficient", "x-0b",
])
def test_from_name_no_size(name):
    assert from_name(name) is None


def test_from_name_extra_entries_win():
    extra = [{"id": "acme/house-model", "params": 1234, "source": "our docs"}]
    assert from_name("acme/house-model", extra=extra).params == 1234
    assert from_name("acme/house-model") is None


# --- configs -----------------------------------------------------------------------------

def test_llama2_config():
    size = from_hf_config(LLAMA2_7B_CFG)
    assert size.params == 6_738_415_616 and size.active_params is None
    assert "computed from config dims" in size.evidence and "32 layers" in size.evidence
    assert size.dims["kv_heads"] == 32


@pytest.mark.parametrize("cfg, expected_b", [
    ({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
      "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 32000}, 68.98),       # Llama-2-70B, GQA
    ({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256}, 8.03),       # Llama-3-8B
    ({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000}, 7.24),
    ({"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
      "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False}, 7.62),
    ({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
      "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True}, 0.494),
    ({"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
      "num_hidden_layers": 16, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": True,
      "head_dim": 64}, 1.24),                                                                   # Llama-3.2-1B, no model_type
])
def test_decoder_configs_match_published(cfg, expected_b):
    assert from_hf_config(cfg).params / 1e9 == pytest.approx(expected_b, rel=0.005)


def test_mixtral_config():
    cfg = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
           "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
           "num_experts_per_tok": 2, "tie_word_embeddings": False}
    size = from_hf_config(cfg)
    assert size.params / 1e9 == pytest.approx(46.70, abs=0.01)
    assert size.active_params / 1e9 == pytest.approx(12.88, abs=0.01)
    assert "8 experts, 2 active" in size.evidence


def test_gpt2_and_bert_configs():
    gpt2 = from_hf_config({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024})
    assert gpt2.params == 124_439_808 and "GPT-2 style" in gpt2.evidence
    bert = from_hf_config({"model_type": "bert", "num_hidden_layers": 24, "hidden_size": 1024, "intermediate_size": 4096,
                           "num_attention_heads": 16, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2})
    assert bert.params / 1e6 == pytest.approx(340, rel=0.02) and "BERT style" in bert.evidence


@pytest.mark.parametrize("cfg", [
    {},
    {"model_type": "llama", "hidden_size": 4096},                                   # dims missing
    {**LLAMA2_7B_CFG, "num_hidden_layers": None},
    {**LLAMA2_7B_CFG, "hidden_size": "4096"},
    {"model_type": "t5", "d_model": 512, "num_layers": 6, "vocab_size": 32128},      # no formula for this architecture
    {"model_type": "qwen2_moe", "hidden_size": 2048},
    {**LLAMA2_7B_CFG, "model_type": "deepseek_v2", "n_routed_experts": 64},
    {"model_type": "mixtral", **{k: v for k, v in LLAMA2_7B_CFG.items() if k != "model_type"}, "num_local_experts": 8},  # top-k missing
    {"model_type": "gpt2", "n_layer": 12},
    {"hidden_size": 4096, "num_hidden_layers": 32},                                  # no model type at all
    None, [], "config.json",
])
def test_config_without_a_decidable_size(cfg):
    assert from_hf_config(cfg) is None


# --- dims --------------------------------------------------------------------------------

@pytest.mark.parametrize("layers, hidden, published_m", [(12, 768, 124), (24, 1024, 355), (36, 1280, 774), (48, 1600, 1558)])
def test_from_dims_gpt2_sizes(layers, hidden, published_m):
    size = from_dims(layers, hidden, 50257, n_positions=1024)
    assert size.params / 1e6 == pytest.approx(published_m, rel=0.005)
    assert "computed from dims" in size.evidence


def test_from_dims_rejects_bad_input():
    assert from_dims(0, 768, 50257) is None
    assert from_dims(12, 768, 50257, style="t5") is None
    assert from_dims(12, "768", 50257) is None  # type: ignore[arg-type]


def test_torchvision_constructors_have_their_documented_sizes():
    size = from_name("torchvision/resnet50")
    assert size.params == 25_557_032 and "torchvision" in size.source
    assert from_name("torchvision/vit_b_16").params == 86_567_656


# -- names -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, total", [("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9), ("acme/Foo-17B-16E-chat", None),
                                         ("Qwen/Qwen3-30B-A3B", 30e9)])
def test_a_size_beside_an_expert_count_is_the_active_size(name, total):
    from gpulint.resolve.modelsize import from_name
    size = from_name(name)
    assert (size.params if size else None) == total


@pytest.mark.parametrize("name, params", [("Qwen/Qwen-1_8B-Chat", None), ("llama_2_7b", None), ("runs/model_7b", 7_000_000_000)])
def test_digits_joined_by_an_underscore_before_the_unit_are_no_size(name, params):
    from gpulint.resolve import modelsize
    size = modelsize.from_name(name)
    assert (size.params if size else None) == params
