"""The instance catalogue: bundled data, schema, name resolution, prices, cost per unit of work."""
from __future__ import annotations

import json
from dataclasses import FrozenInstanceError

import jsonschema
import pytest

from gpulint import catalogue as cat
from gpulint.catalogue import Catalogue, CatalogueError, Price


@pytest.fixture(scope="module")
def c() -> Catalogue:
    return Catalogue.load()


# --- bundled data ---------------------------------------------------------------

def test_json_copy_agrees_with_yaml_source():
    """The JSON copy is what scans load; it must equal the YAML it is generated from.
    On failure run: python -m gpulint.catalogue"""
    text = cat._data_text("instances.json")
    assert text is not None
    assert json.loads(text) == cat.load_bundled_yaml()


def test_bundled_file_validates_against_schema():
    jsonschema.Draft202012Validator(cat.schema()).validate(cat.load_bundled_yaml())


def test_bundled_keeps_structure_and_provenance():
    data = cat.load_bundled_yaml()
    for key in ("defaults", "gpu_models", "instances", "spot", "sagemaker", "price_history", "changes"):
        assert key in data
    for entry in data["instances"]:
        assert entry["source"] and entry["as_of"] and entry["region"], entry["name"]
    # Every gpu_model an instance names has throughput figures.
    known = {v for g in data["gpu_models"] for v in g["catalog_gpu_model_values"]}
    assert {i["gpu_model"] for i in data["instances"]} <= known


def test_records_are_frozen(c):
    inst = c.resolve("p4d.24xlarge")
    with pytest.raises(FrozenInstanceError):
        inst.gpu_count = 1  # type: ignore[misc]


def test_high_impact_facts(c):
    p4d, p4de, p5 = c.resolve("p4d.24xlarge"), c.resolve("p4de.24xlarge"), c.resolve("p5.48xlarge")
    assert (p4d.gpu_count, p4d.gpu_memory_gib, p4d.efa_interfaces, p4d.rdma) == (8, 40, 4, "efa")
    assert (p4de.gpu_memory_gib, p4de.efa_interfaces) == (80, 4)
    assert (p5.gpu_memory_gib, p5.efa_interfaces, p5.network_gbps) == (80, 32, 3200)
    assert c.resolve("p5en.48xlarge").efa_interfaces == 16
    assert c.resolve("p3.2xlarge").bf16_supported is False  # V100
    assert c.resolve("g4dn.xlarge").bf16_supported is False  # T4
    assert c.resolve("g5.xlarge").bf16_supported is True  # A10G (Ampere)
    assert c.resolve("g5.xlarge").gpu_memory_gib == pytest.approx(22.35)  # API-visible GiB of a 24 GB card
    assert c.resolve("g5.xlarge").efa_interfaces is None and c.resolve("g5.48xlarge").efa_interfaces == 1
    assert c.resolve("Standard_NC6s_v3").retired == "2025-09-30"


# --- resolve --------------------------------------------------------------------

def test_resolve_exact_and_sagemaker(c):
    assert c.resolve("p4d.24xlarge").name == "p4d.24xlarge"
    assert c.resolve("ml.p4d.24xlarge").name == "p4d.24xlarge"
    assert c.resolve("ml.g5.2xlarge", provider="aws").name == "g5.2xlarge"
    assert c.resolve("  g5.xlarge ").name == "g5.xlarge"


def test_resolve_azure_spellings(c):
    for spelling in ("Standard_ND96asr_v4", "standard_nd96asr_v4", "ND96asr_v4", "nd96asr_v4"):
        inst = c.resolve(spelling)
        assert inst is not None and inst.name == "Standard_ND96asr_v4", spelling
    assert c.resolve("ND96asr_v4", provider="azure").provider == "azure"


def test_resolve_gcp(c):
    assert c.resolve("a2-highgpu-8g").gpu_count == 8
    assert c.resolve("a3-megagpu-8g").rdma == "gpudirect-tcpxo"
    assert c.resolve("g2-standard-24").gpu_count == 2
    n1 = c.resolve("n1-standard-16", accelerator={"type": "nvidia-tesla-v100", "count": 4})
    assert n1 is not None and n1.name == "n1+nvidia-tesla-v100x4"
    assert c.resolve("n1-highmem-8", provider="gcp", accelerator={"type": "NVIDIA_TESLA_T4", "count": 2}).name == "n1+nvidia-tesla-t4x2"


@pytest.mark.parametrize("name, kwargs", [
    ("p9.48xlarge", {}),                      # unknown type
    ("m5.xlarge", {}),                        # a CPU instance is not in the catalogue
    ("n1-standard-16", {}),                   # n1 without its accelerator is undecidable
    ("n1-standard-16", {"accelerator": {"type": "nvidia-tesla-v100", "count": None}}),
    ("n1-standard-16", {"accelerator": {"type": "nvidia-tesla-v100", "count": 3}}),
    ("p4d.24xlarge", {"provider": "gcp"}),    # wrong provider
    ("", {}),
    (None, {}),
    (42, {}),
    ("${var.instance_type}", {}),
])
def test_resolve_unknown_is_none(c, name, kwargs):
    assert c.resolve(name, **kwargs) is None


# --- gpu models and accelerators ------------------------------------------------

def test_gpu_model(c):
    a100 = c.gpu(c.resolve("p4d.24xlarge"))
    assert (a100.bf16_tflops, a100.tf32_tflops, a100.fp32_tflops) == (312, 156, 19.5)
    v100 = c.gpu(c.resolve("p3.2xlarge"))
    assert v100.bf16_tflops is None and v100.half_tflops == 125
    assert c.gpu(c.resolve("a3-ultragpu-8g")).name == "H200-SXM-141GB"  # alias value H200-141GB
    assert c.gpu(None) is None


def test_by_accelerator(c):
    names = {i.name for i in c.by_accelerator("A100:8")}
    assert {"p4d.24xlarge", "a2-highgpu-8g", "Standard_ND96asr_v4"} <= names
    assert "p4de.24xlarge" not in names  # bare A100 is the 40 GB part (SkyPilot)
    assert {i.name for i in c.by_accelerator("A100-80GB", 8, provider="aws")} == {"p4de.24xlarge"}
    assert {i.name for i in c.by_accelerator("H100", 8, provider="gcp")} == {"a3-highgpu-8g", "a3-megagpu-8g"}
    assert all(i.gpu_model.startswith("V100") for i in c.by_accelerator("V100"))
    assert {i.name for i in c.by_accelerator("T4", 1, provider="aws")} >= {"g4dn.xlarge", "g4dn.16xlarge"}
    assert c.by_accelerator("L4:8", provider="gcp")[0].name == "g2-standard-96"
    assert {i.gpu_model for i in c.by_accelerator("A10G")} == {"A10G-24GB"}
    assert [i.name for i in c.by_accelerator("nvidia-tesla-v100", 4, provider="gcp")] == ["n1+nvidia-tesla-v100x4"]
    assert {i.name for i in c.by_accelerator("NVIDIA-A100-SXM4-80GB", 8)} >= {"p4de.24xlarge", "a2-ultragpu-8g"}
    assert c.by_accelerator("RTX4090") == [] and c.by_accelerator("A100:3") == [] and c.by_accelerator(None) == []  # type: ignore[arg-type]


# --- prices ---------------------------------------------------------------------

def test_on_demand_price_keeps_provenance(c):
    p = c.price(c.resolve("p4d.24xlarge"))
    assert isinstance(p, Price)
    assert (p.usd_per_hour, p.capacity, p.region) == (21.957642, "on-demand", "us-east-1")
    assert "skypilot-catalog" in p.source and "2c3d7ea7" in p.as_of


def test_spot_price_is_midpoint_with_note(c):
    p = c.price(c.resolve("p4d.24xlarge"), "spot")
    assert p.usd_per_hour == pytest.approx((6.53 + 13.99) / 2)
    assert p.note == "spot: midpoint of observed range [6.53, 13.99]; spot prices move constantly"


def test_missing_prices_stay_none(c):
    assert c.price(c.resolve("p5e.48xlarge")).usd_per_hour is None
    assert c.price(c.resolve("p5.4xlarge"), "spot").usd_per_hour is None
    n1 = c.resolve("n1+nvidia-tesla-v100x8")
    assert c.price(n1).usd_per_hour is None and "n1 machine type" in c.price(n1).note
    # The GCP N1 spot figure is GPU-only: not an instance price.
    assert c.price(n1, "spot").usd_per_hour is None
    with pytest.raises(CatalogueError):
        c.price(n1, "reserved")


def test_pricing_config_discount_override_region():
    c = Catalogue.load(pricing={"discount_pct": 20, "region": "eu-west-1", "prices": {"g5.xlarge": 0.8}})
    p = c.price(c.resolve("p4d.24xlarge"))
    assert p.usd_per_hour == pytest.approx(21.957642 * 0.8)
    assert "negotiated discount 20% from config" in p.note
    assert p.region == "us-east-1" and "eu-west-1" in p.note  # never a made-up regional price
    o = c.price(c.resolve("g5.xlarge"))
    assert (o.usd_per_hour, o.note) == (0.8, "from config")
    # discount applies to on-demand only
    assert c.price(c.resolve("p4d.24xlarge"), "spot").usd_per_hour == pytest.approx(10.26)
    same = Catalogue.load(pricing={"region": "us-east-1"})
    p = same.price(same.resolve("p4d.24xlarge"))
    assert p.region == "us-east-1" and p.note == ""
    per_provider = Catalogue.load(pricing={"region": {"gcp": "us-central1"}})
    assert per_provider.price(per_provider.resolve("a2-highgpu-1g")).note == ""


@pytest.mark.parametrize("pricing", [
    {"discount_pct": 120}, {"discount_pct": "20%"}, {"discount_pct": True},
    {"prices": {"p4d.24xlarge": "cheap"}}, {"prices": {"p4d.24xlarge": -1}}, {"prices": ["p4d"]},
    {"region": 5}, {"currency": "EUR"}, "us-east-1",
])
def test_bad_pricing_raises_catalogue_error(pricing):
    with pytest.raises(CatalogueError):
        Catalogue.load(pricing=pricing)


def test_usd_per_pflop_hour_matches_training_facts(c):
    # training-facts.md §9 worked examples ($ per PFLOP-hour of dense bf16/fp16 peak)
    expected = {"g6e.xlarge": 5.1, "p6-b200.48xlarge": 6.3, "p5.48xlarge": 7.0, "trn1.32xlarge": 7.1,
                "p5en.48xlarge": 8.0, "g4dn.xlarge": 8.1, "p4d.24xlarge": 8.8, "p3.2xlarge": 24.5,
                "g5.48xlarge": 29.1, "g6.xlarge": 6.7, "g6.16xlarge": 28.1}
    for name, value in expected.items():
        assert round(c.usd_per_pflop_hour(c.resolve(name)), 1) == value, name
    assert c.usd_per_pflop_hour(c.resolve("p5e.48xlarge")) is None  # no price
    discounted = Catalogue.load(pricing={"discount_pct": 50})
    assert discounted.usd_per_pflop_hour(discounted.resolve("p4d.24xlarge")) == pytest.approx(8.797 / 2, rel=1e-3)


# --- additions ------------------------------------------------------------------

def test_minimal_addition_is_accepted_and_overrides():
    add = {"instances": [
        {"provider": "onprem", "name": "dgx-a100", "gpu_model": "A100-SXM4-80GB", "gpu_count": 8, "gpu_memory_gib": 80},
        {"provider": "aws", "name": "p4d.24xlarge", "gpu_model": "A100-SXM4-40GB", "gpu_count": 8, "gpu_memory_gib": 40,
         "on_demand_usd_per_hour": 15.0, "source": "our EDP price sheet"},
    ], "gpu_models": [{"name": "MI300X", "memory_gib": 192, "bf16_tensor_tflops_dense": 1307}]}
    c = Catalogue.load([add])
    dgx = c.resolve("dgx-a100")
    assert dgx.provider == "onprem" and dgx.on_demand_usd_per_hour is None and dgx.region is None
    assert c.gpu(dgx).bf16_tflops == 312
    assert c.price(dgx).usd_per_hour is None
    p4d = c.resolve("p4d.24xlarge")
    assert p4d.on_demand_usd_per_hour == 15.0 and p4d.source == "our EDP price sheet"
    assert len([i for i in c.instances() if i.name == "p4d.24xlarge"]) == 1
    # the bundled cache is not touched by additions
    assert Catalogue.load().resolve("dgx-a100") is None


@pytest.mark.parametrize("addition, fragment", [
    ({"instances": [{"provider": "aws", "name": "x1", "gpu_model": "A100", "gpu_count": 8}]}, "'x1'"),
    ({"instances": [{"provider": "aws", "name": "x2", "gpu_model": "A100", "gpu_count": 0, "gpu_memory_gib": 80}]}, "gpu_count"),
    ({"instances": [{"provider": "aws", "name": "x3", "gpu_model": "A100", "gpu_count": 8, "gpu_memory_gib": "80GB"}]}, "gpu_memory_gib"),
    ({"instances": [{"provider": "aws", "name": "x4", "gpu_model": "A100", "gpu_count": 8, "gpu_memory_gib": 80, "gpu_mem": 1}]}, "x4"),
    ({"gpu_models": [{"memory_gib": 80}]}, "gpu_models[0]"),
    ({"instance": []}, "instance"),
    (["not", "a", "table"], "catalogue addition 0"),
])
def test_bad_addition_raises_naming_entry(addition, fragment):
    with pytest.raises(CatalogueError) as exc:
        Catalogue.load([addition])
    assert fragment in str(exc.value)
