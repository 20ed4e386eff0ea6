"""Importing downloaded price lists (SkyPilot vms.csv, AWS price-list and Savings Plans CSV) and the overlay file."""
from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from gpulint.pricing import overlay as ov
from gpulint.pricing.catalogue import Catalogue
from gpulint.pricing.price_import import PriceImportError, import_price_file


@pytest.fixture(scope="module")
def c() -> Catalogue:
    return Catalogue.load()


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# Column orders as in skypilot-org/skypilot-catalog catalogs/v9/{aws,gcp}/vms.csv and v6/azure/vms.csv; the rows are made up.
SKY_AWS = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch,LocalDiskType,NVMeSupported,LocalDiskSize,LocalDiskCount
p4d.24xlarge,A100,8,96.0,1152.0,{},21.5,7.1,us-east-1,use1-az1,x86_64,ssd,True,1000.0,8.0
p4d.24xlarge,A100,8,96.0,1152.0,{},21.5,9.4,us-east-1,use1-az2,x86_64,ssd,True,1000.0,8.0
p4d.24xlarge,A100,8,96.0,1152.0,{},21.5,,us-east-1,use1-az6,x86_64,ssd,True,1000.0,8.0
p4d.24xlarge,A100,8,96.0,1152.0,{},24.0,8.0,us-west-2,usw2-az1,x86_64,ssd,True,1000.0,8.0
g5.xlarge,A10G,1,4.0,16.0,{},0.99,0.41,us-east-1,use1-az1,x86_64,ssd,True,250.0,1.0
m5.large,,,2.0,8.0,,0.096,0.04,us-east-1,use1-az1,x86_64,,False,,
"""

SKY_GCP = """InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice
a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.7,0.4
a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-b,0.7,0.4
a3-highgpu-8g,208.0,1872.0,,,,us-central1,us-central1-a,9.5,5.2
g2-standard-4,4.0,16.0,,,,us-central1,us-central1-a,0.15,0.06
,,,A100,1,{},us-central1,us-central1-a,2.9,1.5
,,,A100,1,{},us-central1,us-central1-b,2.9,1.6
,,,H100,8,{},us-central1,us-central1-a,33.6,42.7
,,,A100,1,{},us-east1,us-east1-b,3.1,1.7
"""

SKY_AZURE = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation
Standard_NC24ads_A100_v4,A100-80GB,1,24.0,220,A100-80GB,3.9,0.5,eastus,V2
Standard_NC24ads_A100_v4,A100-80GB,1,24.0,220,A100-80GB,4.1,0.6,westus2,V2
Standard_D2s_v5,,,2.0,8,,0.096,0.01,eastus,"V1,V2"
"""

# AmazonEC2 price-list CSV layout (https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.csv):
# five metadata lines, then the header; only the columns gpulint reads are kept here, plus a few it must ignore.
AWS_HEAD = '''"FormatVersion","v1.0"
"Disclaimer","This pricing list is for informational purposes only."
"Publication Date","2026-11-20T19:11:35Z"
"Version","20261120191135"
"OfferCode","AmazonEC2"
"SKU","OfferTermCode","RateCode","TermType","PriceDescription","EffectiveDate","StartingRange","EndingRange","Unit","PricePerUnit","Currency","RelatedTo","LeaseContractLength","PurchaseOption","OfferingClass","Product Family","serviceCode","Location","Location Type","Instance Type","Tenancy","Operating System","License Model","usageType","operation","CapacityStatus","MarketOption","Pre Installed S/W","Region Code"
'''


def aws_row(sku, term, unit, price, itype, *, os_="Linux", tenancy="Shared", length="", option="", klass="", market="OnDemand",
            capacity="Used", sw="NA", region="us-east-1", desc="x"):
    cells = [sku, "T", f"{sku}.R", term, desc, "2026-11-01", "0", "Inf", unit, price, "USD", "", length, option, klass,
             "Compute Instance", "AmazonEC2", "US East (N. Virginia)", "AWS Region", itype, tenancy, os_, "No License required",
             f"BoxUsage:{itype}", "RunInstances", capacity, market, sw, region]
    return ",".join(f'"{c}"' for c in cells) + "\n"


AWS_LIST = AWS_HEAD + "".join([
    aws_row("A1", "OnDemand", "Hrs", "21.0000000000", "p4d.24xlarge"),
    aws_row("A2", "OnDemand", "Hrs", "30.0000000000", "p4d.24xlarge", os_="Windows"),
    aws_row("A3", "OnDemand", "Hrs", "25.0000000000", "p4d.24xlarge", tenancy="Dedicated"),
    aws_row("A4", "OnDemand", "Hrs", "12.0000000000", "p4d.24xlarge", market="CapacityBlock"),
    aws_row("A5", "OnDemand", "Hrs", "0.0000000000", "p4d.24xlarge", capacity="UnusedCapacityReservation"),
    aws_row("A6", "OnDemand", "Hrs", "22.0000000000", "p4d.24xlarge", sw="SQL Web"),
    aws_row("A7", "OnDemand", "Hrs", "24.0000000000", "p4d.24xlarge", region="us-west-2"),
    aws_row("A1", "Reserved", "Hrs", "13.5000000000", "p4d.24xlarge", length="1yr", option="No Upfront", klass="standard"),
    aws_row("A1", "Reserved", "Hrs", "0.0000000000", "p4d.24xlarge", length="3yr", option="All Upfront", klass="standard"),
    aws_row("A1", "Reserved", "Quantity", "180000", "p4d.24xlarge", length="3yr", option="All Upfront", klass="standard",
            desc="Upfront Fee"),
    aws_row("A1", "Reserved", "Hrs", "9.0000000000", "p4d.24xlarge", length="3yr", option="No Upfront", klass="standard"),
    aws_row("A1", "Reserved", "Hrs", "8.0000000000", "p4d.24xlarge", length="3yr", option="No Upfront", klass="convertible"),
    aws_row("B1", "OnDemand", "Hrs", "1.0060000000", "g5.xlarge"),
    aws_row("C1", "OnDemand", "Hrs", "0.0960000000", "m5.large"),
])

# AmazonComputeSavingsPlan rate file layout (.../savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/<region>/index.csv).
AWS_SP = """FormatVersion,v1.0
Disclaimer,This pricing list is for informational purposes only.
Publication Date,2026-11-18T10:00:00Z
Version,20261118100000
OfferCode,AmazonComputeSavingsPlan
SKU,RateCode,Unit,EffectiveDate,DiscountedRate,Currency,DiscountedSKU,DiscountedServiceCode,DiscountedUsageType,DiscountedOperation,PurchaseOption,LeaseContractLength,LeaseContractLengthUnit,ServiceCode,UsageType,Operation,Description,Instance Family,Location,Location Type,Granularity,Product Family,DiscountedRegionCode,DiscountedInstanceType
S1,S1.1,Hrs,2026-06-05T00:00:00Z,14.2,USD,D1,AmazonEC2,BoxUsage:p5.48xlarge,RunInstances,No Upfront,1,year,ComputeSavingsPlans,EC2SP:p5.1yrNoUpfront,,1 year No Upfront p5 EC2 Instance Savings Plan,p5,US East (N. Virginia),AWS Region,hourly,EC2InstanceSavingsPlans,us-east-1,p5.48xlarge
S1,S1.2,Hrs,2026-06-05T00:00:00Z,20.0,USD,D2,AmazonEC2,DedicatedUsage:p5.48xlarge,RunInstances,No Upfront,1,year,ComputeSavingsPlans,EC2SP:p5.1yrNoUpfront,,dedicated,p5,US East (N. Virginia),AWS Region,hourly,EC2InstanceSavingsPlans,us-east-1,p5.48xlarge
S1,S1.3,Hrs,2026-06-05T00:00:00Z,25.0,USD,D3,AmazonEC2,BoxUsage:p5.48xlarge,RunInstances:0002,No Upfront,1,year,ComputeSavingsPlans,EC2SP:p5.1yrNoUpfront,,windows,p5,US East (N. Virginia),AWS Region,hourly,EC2InstanceSavingsPlans,us-east-1,p5.48xlarge
S2,S2.1,Hrs,2026-06-05T00:00:00Z,10.0,USD,D1,AmazonEC2,BoxUsage:p5.48xlarge,RunInstances,All Upfront,3,year,ComputeSavingsPlans,EC2SP:p5.3yrAllUpfront,,3 year All Upfront,p5,US East (N. Virginia),AWS Region,hourly,EC2InstanceSavingsPlans,us-east-1,p5.48xlarge
S3,S3.1,Hrs,2026-06-05T00:00:00Z,11.5,USD,D1,AmazonEC2,BoxUsage:p5.48xlarge,RunInstances,No Upfront,3,year,ComputeSavingsPlans,EC2SP:p5.3yrNoUpfront,,3 year No Upfront,p5,US East (N. Virginia),AWS Region,hourly,EC2InstanceSavingsPlans,us-east-1,p5.48xlarge
"""


# --- SkyPilot vms.csv ---------------------------------------------------------

def test_skypilot_aws_prices_one_region_with_spot_range(tmp_path, c):
    path = write(tmp_path / "aws" / "vms.csv", SKY_AWS)
    os.utime(path, (1795000000, 1795000000))  # 2026-11-18 UTC: the date a downloaded file carries
    r = import_price_file(path, c)
    assert (r.format, r.provider, r.region) == ("skypilot-vms", "aws", "us-east-1")  # provider from the directory name
    assert r.as_of == "2026-11-18" and "modification time" in r.as_of_basis
    rows = {p["instance"]: p for p in r.prices}
    assert set(rows) == {"p4d.24xlarge", "g5.xlarge"}  # m5.large is not a catalogue instance
    assert rows["p4d.24xlarge"]["on_demand_usd_per_hour"] == 21.5
    assert rows["p4d.24xlarge"]["spot_usd_per_hour_observed"] == [7.1, 9.4]  # min/max over zones; the empty zone is no price
    assert "vms.csv" in rows["p4d.24xlarge"]["source"] and r.sha256[:12] in rows["p4d.24xlarge"]["source"]
    assert "p5.48xlarge" in r.missing
    assert any("other regions than us-east-1" in s for s in r.skipped)


def test_skypilot_region_and_date_options(tmp_path, c):
    path = write(tmp_path / "dl" / "aws-vms.csv", SKY_AWS)
    r = import_price_file(path, c, region="us-west-2", as_of="2026-11-30")
    assert r.provider == "aws"  # from its instance names
    assert [(p["instance"], p["on_demand_usd_per_hour"]) for p in r.prices] == [("p4d.24xlarge", 24.0)]
    assert (r.as_of, r.as_of_basis) == ("2026-11-30", "--as-of")
    with pytest.raises(PriceImportError, match="pass --region"):
        import_price_file(path, c, region="eu-west-1")


def test_skypilot_gcp_adds_the_gpu_rows_and_refuses_on_demand_below_spot(tmp_path, c):
    r = import_price_file(write(tmp_path / "gcp" / "vms.csv", SKY_GCP), c, as_of="2026-11-30")
    rows = {p["instance"]: p for p in r.prices}
    assert r.region == "us-central1"
    assert rows["a2-highgpu-1g"]["on_demand_usd_per_hour"] == pytest.approx(3.6)  # VM 0.7 + A100 x1 2.9
    assert rows["a2-highgpu-1g"]["spot_usd_per_hour_observed"] == [1.9, 2.0]
    assert "Local SSD not included" in rows["a2-highgpu-1g"]["source"]
    assert "a3-highgpu-8g" not in rows  # H100 x8 on-demand 33.6 below its spot 42.7: not a list price
    assert any("a3-highgpu-8g" in s and "below its spot price" in s for s in r.skipped)
    assert any("g2-standard-4" in s and "row missing" in s for s in r.skipped)  # no L4 row in the file


def test_skypilot_azure_by_instance_names(tmp_path, c):
    r = import_price_file(write(tmp_path / "vms.csv", SKY_AZURE), c, as_of="2026-11-30")
    assert (r.provider, r.region) == ("azure", "eastus")
    assert [(p["instance"], p["on_demand_usd_per_hour"], p["spot_usd_per_hour_observed"]) for p in r.prices] == [
        ("Standard_NC24ads_A100_v4", 3.9, [0.5, 0.5])]


# --- AWS price list ---------------------------------------------------------------

def test_aws_price_list_on_demand_like_karpenter_and_reserved(tmp_path, c):
    r = import_price_file(write(tmp_path / "index.csv", AWS_LIST), c)
    assert (r.format, r.provider, r.region, r.as_of) == ("aws-price-list", "aws", "us-east-1", "2026-11-20")
    assert "Publication Date" in r.as_of_basis
    rows = {p["instance"]: p for p in r.prices}
    # Windows, Dedicated, Capacity Block, unused-reservation, SQL and us-west-2 rows are all left out
    assert {k: v["on_demand_usd_per_hour"] for k, v in rows.items()} == {"p4d.24xlarge": 21.0, "g5.xlarge": 1.006}
    assert "spot_usd_per_hour_observed" not in rows["p4d.24xlarge"]  # the list has no spot prices
    assert "Version 20261120191135" in rows["p4d.24xlarge"]["source"]
    commits = {(x["instance"], x["term"]): x for x in r.commitments}
    assert set(commits) == {("p4d.24xlarge", "1yr"), ("p4d.24xlarge", "3yr")}
    one = commits[("p4d.24xlarge", "1yr")]
    assert (one["usd_per_hour"], one["on_demand_usd_per_hour"], one["discount_pct"]) == (13.5, 21.0, 35.7)
    three = commits[("p4d.24xlarge", "3yr")]
    assert three["usd_per_hour"] == 9.0 and three["plan"] == "Standard Reserved Instance, No Upfront"  # not All Upfront, not convertible


def test_aws_price_list_other_region_and_errors(tmp_path, c):
    path = write(tmp_path / "index.csv", AWS_LIST)
    west = import_price_file(path, c, region="us-west-2")
    assert [(p["instance"], p["on_demand_usd_per_hour"]) for p in west.prices] == [("p4d.24xlarge", 24.0)]
    with pytest.raises(PriceImportError, match="us-east-1, us-west-2"):
        import_price_file(path, c, region="ap-south-1")
    with pytest.raises(PriceImportError, match="not a SkyPilot vms.csv"):
        import_price_file(path, c, fmt="skypilot")
    with pytest.raises(PriceImportError, match="not an AWS price-list CSV"):
        import_price_file(write(tmp_path / "aws" / "vms.csv", SKY_AWS), c, fmt="aws")
    other = AWS_HEAD.replace('"OfferCode","AmazonEC2"', '"OfferCode","AmazonS3"')
    with pytest.raises(PriceImportError, match="AmazonS3"):
        import_price_file(write(tmp_path / "s3.csv", other), c)


def test_aws_savings_plans_rates_become_commitments(tmp_path, c):
    r = import_price_file(write(tmp_path / "sp.csv", AWS_SP), c)
    assert (r.format, r.as_of, r.prices) == ("aws-savings-plans", "2026-11-18", [])
    got = {(x["instance"], x["term"]): x for x in r.commitments}
    assert set(got) == {("p5.48xlarge", "1yr"), ("p5.48xlarge", "3yr")}  # dedicated, Windows and All Upfront rows left out
    one = got[("p5.48xlarge", "1yr")]
    assert (one["usd_per_hour"], one["on_demand_usd_per_hour"], one["plan"]) == (14.2, 55.04, "EC2 Instance Savings Plan, No Upfront")
    assert one["discount_pct"] == round(100 * (1 - 14.2 / 55.04), 1)
    assert got[("p5.48xlarge", "3yr")]["usd_per_hour"] == 11.5


@pytest.mark.parametrize("text, message", [
    ("a,b,c\n1,2,3\n", "missing column"),
    ("InstanceType,Price,SpotPrice,Region\nfoo.bar,1,1,us-east-1\n", "pass --provider"),
    ('"FormatVersion","v1.0"\n"OfferCode","AmazonEC2"\n', "no header row"),
])
def test_unreadable_files_say_why(tmp_path, c, text, message):
    with pytest.raises(PriceImportError, match=message):
        import_price_file(write(tmp_path / "f.csv", text), c)


def test_bad_date_and_missing_file(tmp_path, c):
    with pytest.raises(PriceImportError, match="YYYY-MM-DD"):
        import_price_file(write(tmp_path / "aws" / "vms.csv", SKY_AWS), c, as_of="30/11/2026")
    with pytest.raises(PriceImportError, match="no such file"):
        import_price_file(tmp_path / "nope.csv", c)
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PriceImportError, match="UTF-8"):
        import_price_file(tmp_path / "bin.csv", c)


# --- the overlay file ----------------------------------------------------------------

def test_overlay_merge_replaces_by_instance_and_keeps_the_rest(tmp_path, c):
    first = import_price_file(write(tmp_path / "index.csv", AWS_LIST), c)
    data = ov.merge(None, first.record("index.csv", dt.date(2026, 12, 1)), first.prices, first.commitments, dt.date(2026, 12, 1))
    path = tmp_path / ov.OVERLAY_NAME
    ov.write_overlay(path, data)
    second = import_price_file(write(tmp_path / "sp.csv", AWS_SP), c)
    data = ov.merge(ov.read_overlay(path), second.record("sp.csv", dt.date(2026, 12, 2)), second.prices, second.commitments,
                    dt.date(2026, 12, 2))
    ov.write_overlay(path, data)
    back = ov.read_overlay(path)
    assert back["written"] == "2026-12-02" and [i["file"] for i in back["imports"]] == ["index.csv", "sp.csv"]
    assert {p["instance"] for p in back["prices"]} == {"p4d.24xlarge", "g5.xlarge"}  # the Savings Plans import kept them
    assert {(x["instance"], x["term"]) for x in back["commitments"]} == {
        ("p4d.24xlarge", "1yr"), ("p4d.24xlarge", "3yr"), ("p5.48xlarge", "1yr"), ("p5.48xlarge", "3yr")}
    assert back["path"] == str(path)
    loaded = Catalogue.load(overlay=back)
    assert loaded.price(loaded.resolve("p4d.24xlarge")).as_of == "2026-11-20"
    assert loaded.commitment(loaded.resolve("p5.48xlarge"), "1yr").usd_per_hour == 14.2


def test_overlay_validation_names_file_and_field(tmp_path):
    path = tmp_path / ov.OVERLAY_NAME
    path.write_text(json.dumps({**ov.empty_overlay(), "prices": [{"provider": "aws", "instance": "p4d.24xlarge"}]}))
    with pytest.raises(ov.OverlayError, match=r"\.gpulint-prices\.json: prices\.0: 'region' is a required property"):
        ov.read_overlay(path)
    path.write_text("{not json")
    with pytest.raises(ov.OverlayError, match="not valid JSON"):
        ov.read_overlay(path)
    with pytest.raises(ov.OverlayError):
        ov.write_overlay(path, {"format": "something else"})


def test_overlay_path_default_and_configured(tmp_path):
    assert ov.overlay_path(tmp_path, {}) == tmp_path / ".gpulint-prices.json"
    assert ov.overlay_path(tmp_path, {"overlay": "prices/gpu.json"}) == tmp_path / "prices" / "gpu.json"
    assert ov.overlay_path(tmp_path, {"overlay": str(tmp_path / "abs.json")}) == tmp_path / "abs.json"
