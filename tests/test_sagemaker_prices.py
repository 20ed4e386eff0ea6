"""SageMaker's own prices: importing the AmazonSageMaker price list, and ml.* instances priced per use from it.

The CSV layout is the AWS Price List bulk file's (five metadata lines, a header, then one row per SKU and term); the
attributes read (Product Family "ML Instance", Instance Name, Component) are those the price list carries, as
github:vantage-sh/ec2instances.info scraper/aws/sagemaker.go reads them. The prices below are made up.
"""
from __future__ import annotations

import json

import pytest
from conftest import run_cli

from gpulint.pricing import overlay as ov
from gpulint.pricing.catalogue import Catalogue
from gpulint.pricing.price_import import PriceImportError, import_price_file

SM_HEAD = '''"FormatVersion","v1.0"
"Disclaimer","This pricing list is for informational purposes only."
"Publication Date","2026-11-25T08:00:00Z"
"Version","20261125080000"
"OfferCode","AmazonSageMaker"
"SKU","OfferTermCode","RateCode","TermType","PriceDescription","EffectiveDate","StartingRange","EndingRange","Unit","PricePerUnit","Currency","Product Family","serviceCode","Location","Location Type","Instance Type","Instance Name","Component","vCPU","GPU","usageType","operation","Region Code"
'''


def sm_row(sku, name, component, price, *, term="OnDemand", unit="Hrs", family="ML Instance", loc_type="AWS Region",
           region="us-east-1", itype=None):
    cells = [sku, "T", f"{sku}.R", term, "x", "2026-11-01", "0", "Inf", unit, price, "USD", family, "AmazonSageMaker",
             "US East (N. Virginia)", loc_type, itype if itype is not None else f"{name}-{component}", name, component,
             "96", "8", f"USE1-{component}:{name}", "RunInstance", region]
    return ",".join(f'"{c}"' for c in cells) + "\n"


SM_LIST = SM_HEAD + "".join([
    sm_row("S1", "ml.p4d.24xlarge", "Training", "30.0000000000"),
    sm_row("S2", "ml.p4d.24xlarge", "Hosting", "31.5000000000"),
    sm_row("S3", "ml.g5.xlarge", "Notebook", "1.4000000000"),
    sm_row("S4", "ml.g5.xlarge", "Studio Notebook", "1.4100000000"),  # a component gpulint does not bill: counted, skipped
    sm_row("S5", "ml.m5.xlarge", "Training", "0.2300000000"),  # a CPU size the catalogue has no twin for: ignored
    sm_row("S6", "ml.p4d.24xlarge", "Training", "33.0000000000", region="us-west-2"),
    sm_row("S7", "ml.p4d.24xlarge", "Training", "29.0000000000", loc_type="AWS Outposts"),
    sm_row("S8", "ml.p4d.24xlarge", "Training", "20.0000000000", term="Reserved"),
    sm_row("S9", "ml.p4d.24xlarge", "Training", "0.1540000000", family="ML Storage", unit="GB-Mo"),
    # an older list spells instance and component in Instance Type alone
    sm_row("S10", "", "", "5.5000000000", itype="ml.g5.12xlarge-Training"),
])


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def c() -> Catalogue:
    return Catalogue.load()


def test_sagemaker_list_yields_per_use_prices_of_gpu_instances(tmp_path, c):
    r = import_price_file(write(tmp_path / "index.csv", SM_LIST), c)
    assert (r.format, r.provider, r.region, r.as_of) == ("aws-sagemaker-price-list", "aws", "us-east-1", "2026-11-25")
    assert (r.prices, r.commitments) == ([], [])
    got = {(x["instance"], x["use"]): x["usd_per_hour"] for x in r.sagemaker}
    # other regions, Outposts, reserved terms, storage rows and CPU sizes are left out
    assert got == {("ml.p4d.24xlarge", "training"): 30.0, ("ml.p4d.24xlarge", "hosting"): 31.5,
                   ("ml.g5.xlarge", "notebook"): 1.4, ("ml.g5.12xlarge", "training"): 5.5}
    assert any("Studio Notebook" in s for s in r.skipped)
    assert "OfferCode AmazonSageMaker" in r.sagemaker[0]["source"] and "Version 20261125080000" in r.sagemaker[0]["source"]
    assert "ml.p5.48xlarge" in r.missing and "ml.p4d.24xlarge" not in r.missing
    west = import_price_file(tmp_path / "index.csv", c, region="us-west-2")
    assert [(x["instance"], x["usd_per_hour"]) for x in west.sagemaker] == [("ml.p4d.24xlarge", 33.0)]
    with pytest.raises(PriceImportError, match="no on-demand ML Instance row"):
        import_price_file(write(tmp_path / "cpu.csv", SM_HEAD + sm_row("C", "ml.m5.xlarge", "Training", "0.23")), c)
    with pytest.raises(PriceImportError, match="missing SageMaker price-list column"):
        import_price_file(write(tmp_path / "bad.csv", SM_HEAD.replace('"Instance Type","Instance Name",', '')
                                .replace('"TermType",', '')), c)


def test_overlay_keeps_sagemaker_rows_and_the_catalogue_prices_by_use(tmp_path, c):
    r = import_price_file(write(tmp_path / "index.csv", SM_LIST), c)
    import datetime as dt
    data = ov.merge(None, r.record("index.csv", dt.date(2026, 12, 1)), r.prices, r.commitments, dt.date(2026, 12, 1), r.sagemaker)
    path = tmp_path / ".gpulint-prices.json"
    ov.write_overlay(path, data)
    again = ov.merge(ov.read_overlay(path), r.record("index.csv", dt.date(2026, 12, 2)), [], [], dt.date(2026, 12, 2),
                     [{**r.sagemaker[0], "usd_per_hour": 12.0}])
    assert len(again["sagemaker"]) == len(r.sagemaker)  # replaced by (instance, use), the rest kept
    cat = Catalogue.load(overlay=ov.read_overlay(path))
    train = cat.sagemaker_price("ML.P4D.24XLARGE", "training")
    assert (train.usd_per_hour, train.as_of, train.region) == (30.0, "2026-11-25", "us-east-1")
    assert "SageMaker Training list price" in train.note
    assert cat.sagemaker_price("ml.p4d.24xlarge", "hosting").usd_per_hour == 31.5
    assert cat.sagemaker_price("ml.p4d.24xlarge", "notebook") is None  # no row: the caller falls back to the EC2 twin
    discounted = Catalogue.load(overlay=ov.read_overlay(path), pricing={"discount_pct": 10})
    assert discounted.sagemaker_price("ml.p4d.24xlarge", "training").usd_per_hour == 27.0
    pinned = Catalogue.load(pricing={"prices": {"ml.p4d.24xlarge": 35.0}})
    assert pinned.sagemaker_price("ml.p4d.24xlarge", "training").source == "[tool.gpulint] pricing.prices"
    assert c.sagemaker_prices() == ()  # nothing bundled: no verified SageMaker list could be read (instances.yaml says why)


def test_bad_sagemaker_overlay_row_names_the_field(tmp_path):
    bad = {**ov.empty_overlay(), "sagemaker": [{"instance": "p4d.24xlarge", "use": "training", "region": "us-east-1",
                                                "usd_per_hour": 1.0, "as_of": "2026-11-25", "source": "x"}]}
    path = write(tmp_path / "o.json", json.dumps(bad))
    with pytest.raises(ov.OverlayError, match="sagemaker.0.instance"):
        ov.read_overlay(path)


ESTIMATOR = '''import sagemaker
from sagemaker.pytorch import PyTorch

estimator = PyTorch(
    entry_point="train.py",
    source_dir="src",
    role="arn:aws:iam::123456789012:role/SageMakerTraining",
    framework_version="2.2",
    py_version="py310",
    instance_type="ml.p4d.24xlarge",
    instance_count=2,{spot}
)
estimator.fit({{"train": "s3://acme-ml/data/"}})
'''

TRAIN = '''import torch
from torch import nn


def main():
    model = nn.Linear(4096, 10).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(1000):
        x = torch.randn(256, 4096, device="cuda")
        loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
'''


def _compute(project, *args):
    proc = run_cli("workloads", ".", "--format", "json", *args, cwd=project, env={"GPULINT_CACHE_DIR": str(project / ".cache")})
    assert proc.returncode == 0, proc.stderr
    (wl,) = json.loads(proc.stdout)["workloads"]
    return wl["compute"]


def test_cli_import_then_a_sagemaker_training_job_is_priced_at_sagemakers_own_rate(tmp_path):
    project = tmp_path / "proj"
    write(project / "launch_job.py", ESTIMATOR.format(spot=""))
    write(project / "src" / "train.py", TRAIN)
    write(project / "pyproject.toml", "[tool.gpulint]\n")
    before = _compute(project)
    assert before["usd_per_hour"] == round(2 * before["unit_usd_per_hour"], 4) and before["unit_usd_per_hour"] < 30
    assert "lower bound" in before["price_source"] and "AmazonSageMaker" in before["price_source"]

    prices = write(tmp_path / "downloads" / "index.csv", SM_LIST)
    proc = run_cli("catalogue", "import", prices, "--today", "2026-12-01", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "SageMaker price(s)" in proc.stdout and "as of 2026-11-25" in proc.stdout
    after = _compute(project)
    assert (after["unit_usd_per_hour"], after["usd_per_hour"], after["as_of"]) == (30.0, 60.0, "2026-11-25")
    assert "SageMaker Training list price" in after["price_source"] and "lower bound" not in after["price_source"]
    listing = run_cli("catalogue", "--format", "json", "--provider", "aws", "--today", "2026-12-01", cwd=project)
    p4d = next(r for r in json.loads(listing.stdout)["instances"] if r["instance"] == "p4d.24xlarge")
    assert p4d["sagemaker"]["name"] == "ml.p4d.24xlarge"
    assert {u: v["usd_per_hour"] for u, v in p4d["sagemaker"]["prices"].items()} == {"training": 30.0, "hosting": 31.5}
    text = run_cli("catalogue", "--provider", "aws", "--today", "2026-12-01", cwd=project).stdout
    assert "SageMaker: 3 of " in text and "priced at their EC2 twin, a lower bound" in text


def test_managed_spot_training_keeps_the_ec2_twin_spot_figure_as_a_lower_bound(tmp_path):
    project = tmp_path / "proj"
    write(project / "launch_job.py", ESTIMATOR.format(spot="\n    use_spot_instances=True,\n    max_run=3600,\n    max_wait=7200,"))
    write(project / "src" / "train.py", TRAIN)
    write(project / ".gpulint-prices.json", json.dumps({**ov.empty_overlay(), "sagemaker": [
        {"instance": "ml.p4d.24xlarge", "use": "training", "region": "us-east-1", "usd_per_hour": 30.0,
         "as_of": "2026-11-25", "source": "test list"}]}))
    got = _compute(project)
    # SageMaker publishes no spot list price: the figure stays the EC2 twin's spot observation, said to be a lower bound
    assert got["price_capacity"] == "spot" and "lower bound" in got["price_source"] and got["unit_usd_per_hour"] != 30.0
