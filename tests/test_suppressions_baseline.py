"""Inline suppressions, unused-suppression reports (SYS004) and baselines, end to end."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, run_cli
from helpers import cli_scan


@pytest.fixture
def repo(tmp_path):
    dst = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pytorch-fp32-loop", dst)
    return dst


def edit(path, old, new, count=1):
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, count))


# -- inline suppressions -------------------------------------------------------------------------
def test_ignore_on_the_line(repo):
    edit(repo / "train.py", "            loss.backward()\n", "            loss.backward()  # gpulint: ignore[AMP001]\n")
    found = cli_scan(repo)[1]
    assert not any(c == "AMP001" for c, _, _ in found)
    assert ("NET006", "train.py", 27) in found and not any(c == "SYS004" for c, _, _ in found)


def test_ignore_on_the_line_above(repo):
    edit(repo / "train.py", "    model = nn.DataParallel(model)\n",
         "    # gpulint: ignore[NET006] -- single node for now, DDP later\n    model = nn.DataParallel(model)\n")
    found = cli_scan(repo)[1]
    assert not any(c == "NET006" for c, _, _ in found)
    assert ("AMP001", "train.py", 37) in found  # the line below moved down by one


def test_ignore_two_lines_above_does_not_reach(repo):
    edit(repo / "train.py", "    model = nn.DataParallel(model)\n",
         "    # gpulint: ignore[NET006]\n\n    model = nn.DataParallel(model)\n")
    found = cli_scan(repo)[1]
    assert ("NET006", "train.py", 29) in found
    assert ("SYS004", "train.py", 27) in found  # ... and the comment is reported as unused


def test_ignore_several_codes_and_family_prefix(repo):
    edit(repo / "train.py", "    loader = DataLoader(", "    # gpulint: ignore[IO, NET006]\n    loader = DataLoader(")
    found = cli_scan(repo)[1]
    assert not any(c.startswith("IO") for c, _, _ in found)
    # NET006 is not on the next line: that part of the comment is unused
    assert ("SYS004", "train.py", 30) in found


def test_ignore_file(repo):
    edit(repo / "train.py", '"""Train a ResNet-50', '# gpulint: ignore-file[NET, IO002]\n"""Train a ResNet-50')
    codes = [c for c, _, _ in cli_scan(repo)[1]]
    assert codes == ["AMP001", "AMP005", "IO001"]


def test_bare_ignore_suppresses_everything_on_the_line(repo):
    edit(repo / "train.py", "shuffle=True)\n", "shuffle=True)  # gpulint: ignore\n")
    codes = [c for c, _, _ in cli_scan(repo)[1]]
    assert "IO001" not in codes and "IO002" not in codes
    assert "NET006" in codes and "SYS004" not in codes


def test_a_directive_inside_a_string_is_not_a_comment(repo):
    edit(repo / "train.py", "            loss.backward()\n", '            loss.backward(); note = "# gpulint: ignore[AMP001]"\n')
    assert ("AMP001", "train.py", 36) in cli_scan(repo)[1]


def test_yaml_comment_suppression(tmp_path):
    repo = tmp_path / "acc"
    shutil.copytree(FIXTURES / "accelerate-no-mp", repo)
    cfg = repo / "configs" / "accelerate.yaml"
    edit(cfg, 'mixed_precision: "no"\n', 'mixed_precision: "no"  # gpulint: ignore[AMP001] -- V100 box, fp16 unstable here\n')
    rc, found, _ = cli_scan(repo)
    assert found == [] and rc == 0
    # a '#' inside a quoted YAML value is not a comment
    cfg.write_text(cfg.read_text().replace('"no"  # gpulint: ignore[AMP001] -- V100 box, fp16 unstable here',
                                           '"no"\nmain_process_ip: "# gpulint: ignore[AMP001]"'))
    assert [c for c, _, _ in cli_scan(repo)[1]] == ["AMP001"]


def test_shell_comment_suppression_is_unused_where_nothing_fires(repo):
    edit(repo / "scripts" / "launch.sh", "torchrun ", "# gpulint: ignore[NET006]\ntorchrun ")
    found = cli_scan(repo)[1]
    assert ("SYS004", "scripts/launch.sh", 8) in found  # the comment sits below the four #SBATCH lines
    assert ("NET006", "train.py", 27) in found  # a suppression in another file never hides a finding


# -- SYS004 -------------------------------------------------------------------------------------------
def test_unused_suppression_is_reported(repo):
    edit(repo / "imgcls" / "model.py", "    return model\n", "    return model  # gpulint: ignore[NET005]\n")
    rc, found, data = cli_scan(repo)
    (f,) = [f for f in data["findings"] if f["code"] == "SYS004"]
    assert (f["path"], f["line"], f["severity"]) == ("imgcls/model.py", 8, "info")
    assert "NET005" in f["message"]


def test_unused_bare_and_unknown_code(repo):
    edit(repo / "imgcls" / "data.py", "    return ImageFolder(root, transform=tf)\n",
         "    return ImageFolder(root, transform=tf)  # gpulint: ignore\n")
    edit(repo / "imgcls" / "model.py", "    return model\n", "    return model  # gpulint: ignore[FOO123]\n")
    sys004 = {(f["path"], f["line"]): f["message"] for f in cli_scan(repo)[2]["findings"] if f["code"] == "SYS004"}
    assert "suppresses nothing" in sys004[("imgcls/data.py", 7)]
    assert "unknown rule code FOO123" in sys004[("imgcls/model.py", 8)]


def test_unused_ignore_file_is_reported(repo):
    edit(repo / "train.py", '"""Train a ResNet-50', '# gpulint: ignore-file[AMP002]\n"""Train a ResNet-50')
    assert ("SYS004", "train.py", 1) in cli_scan(repo)[1]


def test_no_sys004_when_the_named_code_is_disabled(repo):
    edit(repo / "imgcls" / "model.py", "    return model\n", "    return model  # gpulint: ignore[NET005]\n")
    assert not any(c == "SYS004" for c, _, _ in cli_scan(repo, "--ignore", "NET005")[1])
    (repo / ".gpulint.toml").write_text('ignore = ["NET"]\n')
    assert not any(c == "SYS004" for c, _, _ in cli_scan(repo)[1])


def test_no_sys004_when_sys004_is_disabled(repo):
    edit(repo / "imgcls" / "model.py", "    return model\n", "    return model  # gpulint: ignore[NET005]\n")
    assert not any(c == "SYS004" for c, _, _ in cli_scan(repo, "--ignore", "SYS004")[1])


def test_sys004_itself_can_be_suppressed_per_file(repo):
    edit(repo / "imgcls" / "model.py", "    return model\n", "    return model  # gpulint: ignore[NET005]\n")
    (repo / ".gpulint.toml").write_text('[per-file-ignores]\n"imgcls/*" = ["SYS004"]\n')
    assert not any(c == "SYS004" for c, _, _ in cli_scan(repo)[1])


# -- baselines ----------------------------------------------------------------------------------------
def test_baseline_round_trip_survives_inserted_lines(repo, tmp_path):
    base = tmp_path / "gpulint-baseline.json"
    rc, before, _ = cli_scan(repo, "--write-baseline", base)
    assert rc == 0 and len(before) == 6  # writing the baseline is the job asked for, not a failed check
    stored = json.loads(base.read_text())
    assert len(stored["findings"]) == 6 and all(e["fingerprint"] for e in stored["findings"])

    rc, found, _ = cli_scan(repo, "--baseline", base)
    assert (rc, found) == (0, [])

    # five lines above every finding: line numbers move, fingerprints do not
    edit(repo / "train.py", "import argparse\n", "import argparse\nimport logging\nimport os\n\nlog = logging.getLogger(__name__)\nSEED = 0\n")
    rc, shifted, _ = cli_scan(repo)
    assert sorted(l for _, _, l in shifted) == sorted(l + 5 for _, _, l in before)
    rc, found, _ = cli_scan(repo, "--baseline", base)
    assert (rc, found) == (0, [])

    # a new finding is still reported
    edit(repo / "train.py", "    for epoch in range(args.epochs):\n",
         "    val_loader = DataLoader(build_dataset(args.data), batch_size=args.batch_size, num_workers=4, pin_memory=True)\n"
         "    probe = nn.DataParallel(build_model(num_classes=10))\n"
         "    for epoch in range(args.epochs):\n")
    rc, found, _ = cli_scan(repo, "--baseline", base)
    assert found == [("NET006", "train.py", 37)]
    assert rc == 1


def test_baseline_from_config(repo):
    assert cli_scan(repo, "--write-baseline", repo / ".gpulint-baseline.json")[0] == 0
    (repo / ".gpulint.toml").write_text('baseline = ".gpulint-baseline.json"\n')
    assert cli_scan(repo)[:2] == (0, [])


def test_write_baseline_says_what_it_wrote_and_exits_0(repo, tmp_path):
    """Issue 50: --write-baseline printed every finding, exited 1 and never said it had written the file."""
    base = tmp_path / "b.json"
    proc = run_cli("scan", repo, "--write-baseline", base)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote 6 findings to {base}" in proc.stderr
    assert len(json.loads(base.read_text())["findings"]) == 6


def test_scan_through_a_baseline_says_how_many_it_hid(repo, tmp_path):
    base = tmp_path / "b.json"
    run_cli("scan", repo, "--write-baseline", base)
    edit(repo / "train.py", "    for epoch in range(args.epochs):\n",
         "    probe = nn.DataParallel(build_model(num_classes=10))\n    for epoch in range(args.epochs):\n")
    proc = run_cli("scan", repo, "--baseline", base)
    assert proc.returncode == 1
    summary = [line for line in proc.stdout.splitlines() if line.startswith("Found ")]
    assert summary and summary[0].endswith(f"6 findings hidden by the baseline {base}."), proc.stdout
    # the same baseline under another name, answered from the last scan's record: the summary names the file given
    moved = tmp_path / "moved.json"
    shutil.copy(base, moved)
    again = run_cli("scan", repo, "--baseline", moved, "--verbose")
    assert "the last scan's result was reused" in again.stderr
    assert f"6 findings hidden by the baseline {moved}." in again.stdout
    assert "hidden by the baseline" not in run_cli("scan", repo).stdout  # no baseline, no such words


def test_fixed_finding_leaves_the_rest_matched(repo, tmp_path):
    base = tmp_path / "b.json"
    cli_scan(repo, "--write-baseline", base)
    edit(repo / "train.py", 'dist.init_process_group("gloo")', 'dist.init_process_group("nccl")')
    assert cli_scan(repo, "--baseline", base)[1] == []


@pytest.mark.parametrize("content, message", [
    (None, "baseline file not found"),
    ("not json", "not a gpulint baseline"),
    ('{"findings": 3}', "not a gpulint baseline"),
])
def test_bad_baseline_is_exit_2(repo, tmp_path, content, message):
    base = tmp_path / "b.json"
    if content is not None:
        base.write_text(content)
    proc = run_cli("scan", repo, "--baseline", base)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
