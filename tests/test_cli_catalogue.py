"""`gpulint catalogue` and `gpulint catalogue import` end to end, through a subprocess."""
from __future__ import annotations

import json
import shutil

from conftest import FIXTURES, run_cli
from test_price_import import AWS_LIST, SKY_GCP, write


def catalogue_json(cwd, *args):
    proc = run_cli("catalogue", "--format", "json", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_lists_every_instance_with_price_region_date_and_source(tmp_path):
    proc = run_cli("catalogue", "--today", "2026-12-01", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    line = next(l for l in out.splitlines() if l.startswith("aws ") and " p4d.24xlarge " in l)
    assert "21.96" in line and "6.53-13.99" in line and "us-east-1" in line and "2026-07-20" in line
    assert "karpenter-provider-aws" in out and "Cyclenerd" in out and "Sources:" in out
    assert "93 instances" in out and "aws 2026-07-20 (134 days)" in out
    assert "Overlay: none" in out
    # 134 days is within the default 180: only the undated Azure prices are warned about, on stderr
    assert "azure prices carry no verified date" in proc.stderr and "aws prices are" not in proc.stderr


def test_json_listing_and_staleness_warning(tmp_path):
    data, err = catalogue_json(tmp_path, "--today", "2027-06-01", "--provider", "aws")
    assert {i["provider"] for i in data["instances"]} == {"aws"} and len(data["instances"]) == 49
    p4d = next(i for i in data["instances"] if i["instance"] == "p4d.24xlarge")
    assert p4d["on_demand"]["as_of"] == "2026-07-20" and p4d["on_demand"]["usd_per_month"] == 16029.08
    assert p4d["spot"]["observed_range"] == [6.53, 13.99] and p4d["spot"]["as_of"].startswith("an undated snapshot")
    assert p4d["commitments"]["3yr"]["up_to"] is True
    assert data["ages"] == [{"provider": "aws", "oldest": "2026-07-20", "days": 316, "dated": 48, "undated": 0}]
    assert "aws prices are 316 days old" in err and "max-age-days" in err
    assert data["warnings"] and "316 days" in data["warnings"][0]


def test_max_age_and_hours_per_month_come_from_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint.pricing]\nmax-age-days = 400\nhours-per-month = 720\n'
                                            'commitments = ["p4d.*"]\n')
    data, err = catalogue_json(tmp_path, "--today", "2027-06-01", "--provider", "aws")
    assert "aws prices are" not in err and data["max_age_days"] == 400 and data["hours_per_month"] == 720
    p4d = next(i for i in data["instances"] if i["instance"] == "p4d.24xlarge")
    assert p4d["on_demand"]["usd_per_month"] == round(21.957642 * 720, 2) and p4d["committed"] == "p4d.*"


def test_bad_pricing_config_is_a_clean_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint.pricing]\nhours-per-month = 0\n')
    proc = run_cli("catalogue", cwd=tmp_path)
    assert proc.returncode == 2 and "pricing.hours-per-month" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("catalogue", "--provider", "oracle", cwd=tmp_path.parent)
    assert proc.returncode == 2 and "no instances of provider 'oracle'" in proc.stderr


def test_import_aws_price_list_then_catalogue_and_scan_use_it(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "mem-bert-p4d", project)
    (project / "pyproject.toml").write_text("[tool.gpulint]\n")
    prices = write(tmp_path / "downloads" / "index.csv", AWS_LIST)
    proc = run_cli("catalogue", "import", prices, "--today", "2026-12-01", cwd=project)
    assert proc.returncode == 0, proc.stderr
    overlay = project / ".gpulint-prices.json"
    assert f"wrote {overlay.name}" in proc.stdout or f"wrote {overlay}" in proc.stdout
    assert "as of 2026-11-20" in proc.stdout and "Publication Date" in proc.stdout and "commit it" in proc.stdout
    data = json.loads(overlay.read_text())
    assert data["imports"][0]["format"] == "aws-price-list" and data["imports"][0]["as_of"] == "2026-11-20"

    listing, _ = catalogue_json(project, "--provider", "aws", "--today", "2026-12-01")
    p4d = next(i for i in listing["instances"] if i["instance"] == "p4d.24xlarge")
    assert p4d["on_demand"]["usd_per_hour"] == 21.0 and p4d["on_demand"]["as_of"] == "2026-11-20"
    assert "index.csv" in p4d["on_demand"]["source"] and listing["overlay"] == str(overlay)
    assert p4d["commitments"]["1yr"]["usd_per_hour"] == 13.5 and p4d["commitments"]["1yr"]["up_to"] is False
    assert next(a for a in listing["ages"] if a["provider"] == "aws")["oldest"] == "2026-07-20"  # sizes not in the file keep theirs

    scan = run_cli("scan", ".", "--format", "json", cwd=project)
    assert scan.returncode in (0, 1), scan.stderr
    bases = [f["cost_impact"]["basis"] for f in json.loads(scan.stdout)["findings"] if (f.get("cost_impact") or {}).get("basis")]
    assert any("p4d.24xlarge at $21.00/h" in b and "price as of 2026-11-20" in b and "index.csv" in b for b in bases), bases


def test_import_skypilot_to_a_configured_overlay_path(tmp_path):
    (tmp_path / ".gpulint.toml").write_text('[pricing]\noverlay = "prices/gcp.json"\n')
    (tmp_path / "prices").mkdir()
    vms = write(tmp_path / "gcp" / "vms.csv", SKY_GCP)
    proc = run_cli("catalogue", "import", vms, "--as-of", "2026-11-30", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "skipped" in proc.stdout and "below its spot price" in proc.stdout  # the A3 row a list price cannot be
    written = json.loads((tmp_path / "prices" / "gcp.json").read_text())
    assert [p["instance"] for p in written["prices"]] == ["a2-highgpu-1g"]
    listing, _ = catalogue_json(tmp_path, "--provider", "gcp", "--today", "2026-12-01")
    a2 = next(i for i in listing["instances"] if i["instance"] == "a2-highgpu-1g")
    assert (a2["on_demand"]["usd_per_hour"], a2["on_demand"]["as_of"]) == (3.6, "2026-11-30")


def test_missing_configured_overlay_and_broken_overlay_stop_the_scan(tmp_path):
    (tmp_path / ".gpulint.toml").write_text('[pricing]\noverlay = "prices.json"\n')
    (tmp_path / "train.py").write_text("print('hi')\n")
    proc = run_cli("scan", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "pricing.overlay" in proc.stderr and "does not exist" in proc.stderr
    listing = run_cli("catalogue", cwd=tmp_path)  # the listing still works and says so
    assert listing.returncode == 0 and "prices.json does not exist" in listing.stderr
    (tmp_path / "prices.json").write_text('{"format": "gpulint-price-overlay"}')
    proc = run_cli("scan", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "prices.json" in proc.stderr and "required property" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_import_errors_are_clean(tmp_path):
    bad = write(tmp_path / "x.csv", "a,b\n1,2\n")
    proc = run_cli("catalogue", "import", bad, cwd=tmp_path)
    assert proc.returncode == 2 and "missing column" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / ".gpulint-prices.json").exists()
    proc = run_cli("catalogue", "import", tmp_path / "nope.csv", cwd=tmp_path)
    assert proc.returncode == 2 and "no such file" in proc.stderr
    proc = run_cli("catalogue", "import", bad, "--as-of", "yesterday", cwd=tmp_path)
    assert proc.returncode == 2 and "YYYY-MM-DD" in proc.stderr
