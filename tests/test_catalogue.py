"""The instance catalogue: bundled data, schema, name resolution, prices, cost per unit of work."""
from __future__ import annotations

import json
from dataclasses import FrozenInstanceError

import jsonschema
import pytest

from gpulint.pricing import catalogue as cat
from gpulint.pricing.catalogue import Catalogue, CatalogueError, Price


@pytest.fixture(scope="module")
def c() -> Catalogue:
    return Catalogue.load()


# --- bundled data ---------------------------------------------------------------

def test_json_copy_agrees_with_yaml_source():
    """The JSON copy is what scans load; it must equal the YAML it is generated from.
    On failure run: python -m gpulint.pricing.catalogue"""
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
    assert p.as_of == "2026-07-20" and "karpenter-provider-aws" in p.source and "6fc13b52" in p.source


def test_spot_price_is_midpoint_with_note(c):
    p = c.price(c.resolve("p4d.24xlarge"), "spot")
    assert p.usd_per_hour == pytest.approx((6.53 + 13.99) / 2)
    assert p.note == "spot: midpoint of observed range [6.53, 13.99]; spot prices move constantly"
    # the spot figure comes from another (undated) snapshot than the on-demand one and says so
    assert p.as_of.startswith("an undated snapshot") and "skypilot-catalog" in p.source and "SpotPrice" in p.source
    g = c.price(c.resolve("a2-highgpu-1g"), "spot")
    assert (g.usd_per_hour, g.as_of) == (1.92802, "2026-07-30") and "Cyclenerd" in g.source
    n1 = c.resolve("n1+nvidia-tesla-t4x1")  # its GPU-only spot figure still comes from SkyPilot: no borrowed date
    assert n1.spot_as_of.startswith("an undated snapshot") and "skypilot-catalog" in n1.spot_source


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


# --- dated prices (issue 13) ------------------------------------------------------

def test_every_aws_price_is_dated_to_the_karpenter_table():
    """All AWS on-demand figures equal the us-east-1 table aws/karpenter-provider-aws generated at
    2026-07-20T13:44:30Z (checked price by price when the catalogue was audited); each entry says so."""
    data = cat.load_bundled_yaml()
    aws = [e for e in data["instances"] if e["provider"] == "aws"]
    assert len(aws) == 49
    for e in aws:
        assert e["as_of"] == "2026-07-20", e["name"]
        assert "karpenter-provider-aws" in e["source"]["price"] and "2026-07-20T13:44:30Z" in e["source"]["price"], e["name"]
    assert sum(e["on_demand_usd_per_hour"] is not None for e in aws) == 48  # p5e.48xlarge: no on-demand price anywhere
    history = " ".join(h["note"] + h["source"] for h in data["price_history"])
    assert "2025-04-28T13:22:31Z" in history and "2025-06-23T13:18:30Z" in history


def test_no_entry_claims_an_unverified_date_and_undated_ones_say_so():
    for e in cat.load_bundled_yaml()["instances"]:
        assert "exact date unverified" not in e["as_of"], e["name"]
        assert cat.price_date(e["as_of"]) is not None or e["as_of"].startswith("an undated snapshot"), e["name"]


def test_gcp_a3_prices_are_the_list_prices_and_h200_is_marked_uncertain(c):
    h100, mega, h200 = c.resolve("a3-highgpu-8g"), c.resolve("a3-megagpu-8g"), c.resolve("a3-ultragpu-8g")
    # the high SkyPilot rows (78.37 / 82.75 for 8 GPUs) plus the VM and the bundled Local SSD, as the Cyclenerd table totals them
    assert (h100.on_demand_usd_per_hour, h100.as_of, h100.region) == (88.55576, "2026-07-30", "us-east4")
    assert mega.on_demand_usd_per_hour == 92.93759
    assert "Cyclenerd" in h100.source and "below its own spot price" in h100.notes
    assert h200.on_demand_usd_per_hour == 86.75992 and "PRICE UNCERTAIN" in h200.notes
    assert cat.price_date(h200.as_of) is None
    assert c.resolve("a2-ultragpu-8g").on_demand_usd_per_hour == 40.55038  # was null: the SkyPilot A100-80GB rows conflicted


def test_price_ages_per_provider(c):
    ages = {a.provider: a for a in c.price_ages()}
    assert ages["aws"].oldest == cat._dt.date(2026, 7, 20) and (ages["aws"].dated, ages["aws"].undated) == (48, 0)
    assert ages["gcp"].oldest == cat._dt.date(2026, 7, 30) and ages["gcp"].undated == 1  # a3-ultragpu-8g
    assert ages["azure"].oldest is None and ages["azure"].undated == 17
    assert ages["aws"].days(cat._dt.date(2026, 12, 1)) == 134
    assert c.max_age_days == 180
    assert Catalogue.load(pricing={"max-age-days": 30}).max_age_days == 30


@pytest.mark.parametrize("text, expected", [("2026-07-20", (2026, 7, 20)), ("2026-07-20 (note)", (2026, 7, 20)),
                                            ("an undated snapshot (x)", None), (None, None), ("2026-13-01", None)])
def test_price_date(text, expected):
    assert cat.price_date(text) == (cat._dt.date(*expected) if expected else None)


# --- months and commitments ------------------------------------------------------

def test_hours_per_month_default_and_config(c):
    assert c.hours_per_month == 730
    assert c.monthly(21.957642) == pytest.approx(16029.08) and c.monthly(None) is None
    c720 = Catalogue.load(pricing={"hours-per-month": 720})
    assert c720.hours_per_month == 720 and c720.monthly(1.0) == 720.0


@pytest.mark.parametrize("pricing", [{"hours-per-month": 0}, {"hours-per-month": 800}, {"hours-per-month": "730"},
                                     {"max-age-days": 0}, {"max-age-days": 1.5}, {"commitments": "p4d.24xlarge"},
                                     {"commitments": [""]}, {"overlay": 3}])
def test_bad_new_pricing_keys_raise(pricing):
    with pytest.raises(CatalogueError):
        Catalogue.load(pricing=pricing)


def test_commitment_exact_gcp_rate(c):
    one = c.commitment(c.resolve("a3-highgpu-8g"), "1yr")
    three = c.commitment(c.resolve("a3-highgpu-8g"), "3yr")
    assert (one.usd_per_hour, one.discount_pct, one.up_to, one.region, one.as_of) == (61.4251, 30.6, False, "us-east4", "2026-07-30")
    assert three.usd_per_hour == 38.89397 and three.discount_pct == 56.1
    assert "Cyclenerd" in one.source and one.plan == "resource-based committed use discount"
    g2 = c.commitment(c.resolve("g2-standard-24"), "3yr")
    assert g2.discount_pct == 55.0 and g2.usd_per_hour == pytest.approx(0.90037, abs=1e-5)


def test_commitment_provider_ceiling_and_missing(c):
    aws = c.commitment(c.resolve("p4d.24xlarge"), "1yr")
    assert aws.up_to and aws.usd_per_hour is None and aws.discount_pct == 72 and "savingsplans/faqs" in aws.source
    az = c.commitment(c.resolve("Standard_ND96asr_v4"), "3yr")
    assert az.up_to and az.discount_pct == 72 and az.as_of == "2023-11-17"
    assert c.commitment(c.resolve("a3-ultragpu-8g"), "1yr") is None  # no source gives it: nothing invented
    with pytest.raises(CatalogueError):
        c.commitment(c.resolve("p4d.24xlarge"), "5yr")


def test_commitment_specificity_instance_then_family_then_provider():
    rows = [
        {"provider": "aws", "family": "p4d.*", "term": "any", "up_to": True, "discount_pct": 50, "plan": "family max", "source": "s1"},
        {"provider": "aws", "family": "p4d.*", "term": "1yr", "up_to": True, "discount_pct": 40, "plan": "family 1yr", "source": "s2"},
        {"provider": "aws", "instance": "p4d.24xlarge", "term": "3yr", "usd_per_hour": 9.0, "on_demand_usd_per_hour": 21.957642,
         "discount_pct": 59.0, "plan": "RI 3yr", "as_of": "2026-11-20", "source": "our price list"},
    ]
    c = Catalogue.load([{"commitments": rows}])
    p4d, p5 = c.resolve("p4d.24xlarge"), c.resolve("p5.48xlarge")
    assert c.commitment(p4d, "3yr").plan == "RI 3yr"      # the instance's own rate
    assert c.commitment(p4d, "1yr").plan == "family 1yr"  # term-specific family row beats the "any" one
    assert c.commitment(p5, "1yr").discount_pct == 72      # not in the family: the provider's stated maximum


@pytest.mark.parametrize("row, fragment", [
    ({"provider": "aws", "term": "1yr", "usd_per_hour": 1.0, "discount_pct": 10, "plan": "x", "source": "s"}, "commitments[0]"),
    ({"provider": "aws", "term": "2yr", "up_to": True, "discount_pct": 10, "plan": "x", "source": "s"}, "term"),
    ({"provider": "aws", "instance": "a", "family": "b*", "term": "1yr", "up_to": True, "discount_pct": 10, "plan": "x", "source": "s"},
     "commitments[0]"),
    ({"provider": "aws", "term": "1yr", "discount_pct": 10, "plan": "x", "source": "s"}, "commitments[0]"),  # neither rate nor up_to
])
def test_bad_commitment_rows_are_rejected(row, fragment):
    with pytest.raises(CatalogueError) as exc:
        Catalogue.load([{"commitments": [row]}])
    assert fragment in str(exc.value)


def test_committed_patterns(c):
    held = Catalogue.load(pricing={"commitments": ["p4d.24xlarge", "g5.*", "gcp:a3-*", "azure:standard_nc*"]})
    assert held.committed(held.resolve("p4d.24xlarge")) == "p4d.24xlarge"
    assert held.committed(held.resolve("g5.2xlarge")) == "g5.*"
    assert held.committed(held.resolve("a3-megagpu-8g")) == "gcp:a3-*"
    assert held.committed(held.resolve("Standard_NC24ads_A100_v4")) == "azure:standard_nc*"  # Azure names fold case and Standard_
    assert held.committed(held.resolve("p5.48xlarge")) is None
    assert c.committed(c.resolve("p4d.24xlarge")) is None


# --- price overlay ---------------------------------------------------------------

def _overlay(prices=(), commitments=()):
    return {"format": "gpulint-price-overlay", "version": 1, "imports": [], "prices": list(prices),
            "commitments": list(commitments), "path": "/proj/.gpulint-prices.json"}


def test_overlay_replaces_prices_with_their_date_and_source():
    ov = _overlay([
        {"provider": "aws", "instance": "p4d.24xlarge", "region": "us-east-1", "on_demand_usd_per_hour": 20.0,
         "as_of": "2026-11-20", "source": "AWS price list index.csv"},            # no spot key: the bundled observation stays
        {"provider": "aws", "instance": "g5.xlarge", "region": "us-west-2", "on_demand_usd_per_hour": 1.1,
         "as_of": "2026-11-20", "source": "AWS price list us-west-2"},            # another region: bundled spot is dropped
        {"provider": "gcp", "instance": "a2-highgpu-1g", "region": "us-central1", "on_demand_usd_per_hour": 3.5,
         "spot_usd_per_hour_observed": [1.5, 1.6], "as_of": "2026-11-01", "source": "SkyPilot vms.csv"},
        {"provider": "aws", "instance": "x9.nonexistent", "region": "us-east-1", "on_demand_usd_per_hour": 1.0,
         "as_of": "2026-11-20", "source": "s"},
    ], [{"provider": "aws", "instance": "p4d.24xlarge", "region": "us-east-1", "term": "1yr", "usd_per_hour": 13.0,
         "on_demand_usd_per_hour": 20.0, "discount_pct": 35.0, "plan": "Standard Reserved Instance, No Upfront",
         "as_of": "2026-11-20", "source": "AWS price list index.csv"}])
    c = Catalogue.load(overlay=ov)
    p = c.price(c.resolve("p4d.24xlarge"))
    assert (p.usd_per_hour, p.as_of, p.source) == (20.0, "2026-11-20", "AWS price list index.csv")
    spot = c.price(c.resolve("p4d.24xlarge"), "spot")
    assert spot.usd_per_hour == pytest.approx(10.26) and spot.as_of.startswith("an undated snapshot")
    g5 = c.resolve("g5.xlarge")
    assert g5.region == "us-west-2" and c.price(g5, "spot").usd_per_hour is None
    a2 = c.price(c.resolve("a2-highgpu-1g"), "spot")
    assert (a2.usd_per_hour, a2.as_of) == (1.55, "2026-11-01")
    assert c.resolve("x9.nonexistent") is None
    one = c.commitment(c.resolve("p4d.24xlarge"), "1yr")
    assert (one.usd_per_hour, one.up_to) == (13.0, False)
    assert c.commitment(c.resolve("p4d.24xlarge"), "3yr").up_to  # not in the overlay: the bundled ceiling
    assert c.overlay_source == "/proj/.gpulint-prices.json"
    assert {a.provider: a.oldest for a in c.price_ages()}["aws"] == cat._dt.date(2026, 7, 20)  # untouched entries keep theirs
    # additions still win over the overlay
    mine = Catalogue.load([{"instances": [{"provider": "aws", "name": "p4d.24xlarge", "gpu_model": "A100-SXM4-40GB", "gpu_count": 8,
                                           "gpu_memory_gib": 40, "on_demand_usd_per_hour": 15.0}]}], overlay=ov)
    assert mine.price(mine.resolve("p4d.24xlarge")).usd_per_hour == 15.0
