"""`gpulint lsp`: the pieces in-process (ranges, hover text, suppression edits,
the latest-wins worker), then the real server as a subprocess over stdio."""
from __future__ import annotations

import sys
import threading
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace.position_codec import PositionCodec  # noqa: E402

from gpulint.lsp import actions, convert  # noqa: E402
from gpulint.lsp.worker import LatestWins  # noqa: E402
from gpulint.core.model import CostImpact, Finding, Location, Related, Severity  # noqa: E402
from gpulint.testing import scan_files  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from lsp_client import LspClient  # noqa: E402
from helpers import codes  # noqa: E402

TRAIN_FP32 = """\
import torch
model = build_model().cuda()  # a model of unknown size: a one-layer nn.Linear would be tutorial-sized (info)
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""
TRAIN_AMP = """\
import torch
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""
ACCEL_TRAIN = """\
from accelerate import Accelerator
accelerator = Accelerator()
model, opt, loader = accelerator.prepare(model, opt, loader)
for batch in loader:
    loss = model(**batch).loss
    accelerator.backward(loss)
    opt.step()
"""
ACCEL_CONFIG = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: "no"
num_machines: 1
num_processes: 8
"""

UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)


def _apply(text: str, edit: actions.Edit) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))

    def off(line: int, char: int) -> int:
        return offsets[min(line, len(lines))] + char

    return text[: off(edit.start_line, edit.start_char)] + edit.text + text[off(edit.end_line, edit.end_char):]


# -- ranges and hover -------------------------------------------------------------------------
def test_range_counts_utf16_units_and_ends_exclusive():
    lines = ['x = "😋"; model.cuda()']
    loc = Location("t.py", 1, 10, 1, 22)  # 1-based code points, end exclusive: `model.cuda()`
    rng = convert.loc_range(loc, lines, UTF16)
    # the emoji is one code point but two UTF-16 units
    assert (rng.start.line, rng.start.character, rng.end.character) == (0, 10, 22)
    utf32 = convert.loc_range(loc, lines, PositionCodec(types.PositionEncodingKind.Utf32))
    assert (utf32.start.character, utf32.end.character) == (9, 21)


def test_range_without_end_runs_to_end_of_text_and_notebooks_cover_their_json_line():
    rng = convert.loc_range(Location("a.yaml", 2, 1), ["a: 1", "mixed_precision: 'no'   "], UTF16)
    assert (rng.start.line, rng.start.character, rng.end.line, rng.end.character) == (1, 0, 1, 21)
    nb = convert.loc_range(Location("n.ipynb", 2, 5, cell=1, cell_line=1), ["{", '    "loss.backward()\\n",'], UTF16)
    assert (nb.start.character, nb.end.character) == (4, len('    "loss.backward()\\n",'))
    # a location past the end of a file that changed stays on its line, not an exception
    gone = convert.loc_range(Location("t.py", 9, 3), ["only one line"], UTF16)
    assert gone.start.line == 8


def test_diagnostic_maps_severity_code_related_and_has_no_link():
    f = Finding("AMP001", "missing-mixed-precision", Severity.WARNING, Location("train.py", 2, 1, 2, 6), "fp32 training",
                "use bf16", CostImpact(10.96, "p4d price", "medium"), (Related(Location("infra/main.tf", 3, 1), "p4d.24xlarge"),), "train.py")
    d = convert.diagnostic(f, ["x", "loss = 1"], UTF16, lambda rel: ["a", "b", "instance_type = 'p4d.24xlarge'"], lambda rel: f"file:///r/{rel}")
    assert d.code == "AMP001" and d.source == "gpulint" and d.severity == types.DiagnosticSeverity.Warning
    assert d.code_description is None
    assert d.message.startswith("fp32 training") and "$10.96/h" in d.message
    assert d.data["name"] == "missing-mixed-precision"
    (rel,) = d.related_information
    assert rel.location.uri == "file:///r/infra/main.tf" and rel.location.range.start.line == 2 and rel.message == "p4d.24xlarge"
    for sev, want in ((Severity.ERROR, types.DiagnosticSeverity.Error), (Severity.INFO, types.DiagnosticSeverity.Information)):
        assert convert.diagnostic(f.with_(severity=sev), ["x", "y"], UTF16, lambda r: None, str).severity == want


def test_hover_has_guidance_and_cost():
    f = Finding("AMP001", "missing-mixed-precision", Severity.WARNING, Location("train.py", 2), "fp32 training",
                "Wrap the forward pass in torch.autocast.", CostImpact(10.96, "a third of p4d.24xlarge hours", "medium"))
    md = convert.hover_markdown([f])
    assert "**AMP001**" in md and "torch.autocast" in md and "$10.96/h" in md and "a third of p4d.24xlarge hours" in md
    no_cost = convert.hover_markdown([f.with_(cost_impact=CostImpact(None, "No instance is known.", "low"))])
    assert "No instance is known." in no_cost and "$" not in no_cost


# -- suppression edits: applied to the text, then scanned again --------------------------------
def test_python_line_suppression_appended_and_effective():
    edit = actions.line_suppression("python", ("#",), TRAIN_FP32, 5, "AMP001")
    new = _apply(TRAIN_FP32, edit)
    assert new.splitlines()[5] == "    loss.backward()  # gpulint: ignore[AMP001]"
    compile(new, "train.py", "exec")
    assert ("AMP001", 6) in codes({"train.py": TRAIN_FP32}, fields=("code", "line"), path="train.py")
    assert "AMP001" not in [c for c, _ in codes({"train.py": new}, fields=("code", "line"), path="train.py")]


def test_python_file_suppression_after_shebang_and_coding_and_effective():
    text = "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n" + TRAIN_FP32
    edit = actions.file_suppression("python", ("#",), text, "AMP001")
    new = _apply(text, edit)
    assert new.splitlines()[:3] == ["#!/usr/bin/env python", "# -*- coding: utf-8 -*-", "# gpulint: ignore-file[AMP001]"]
    assert "AMP001" not in [c for c, _ in codes({"train.py": new}, fields=("code", "line"), path="train.py")]


def test_existing_directive_is_extended_not_duplicated():
    text = TRAIN_FP32.replace("    loss.backward()\n", "    loss.backward()  # gpulint: ignore[IO001]\n")
    edit = actions.line_suppression("python", ("#",), text, 5, "AMP001")
    assert _apply(text, edit).splitlines()[5] == "    loss.backward()  # gpulint: ignore[IO001, AMP001]"
    assert actions.line_suppression("python", ("#",), _apply(text, edit), 5, "AMP001") is None
    ftext = "# gpulint: ignore-file[NET006]\n" + TRAIN_FP32
    fedit = actions.file_suppression("python", ("#",), ftext, "AMP001")
    assert _apply(ftext, fedit).splitlines()[0] == "# gpulint: ignore-file[NET006, AMP001]"


def test_python_unsafe_line_ends_go_above_or_nowhere():
    text = 'x = 1 + \\\n    2\ns = """first\nsecond\n"""\ny = 3\n'
    # a line ending in a backslash: the comment goes on its own line above
    above = actions.line_suppression("python", ("#",), text, 0, "AMP001")
    assert above.start_line == 0 and above.text == "# gpulint: ignore[AMP001]\n"
    compile(_apply(text, above), "t.py", "exec")
    # the last line of the continued statement takes the comment at its end
    last = actions.line_suppression("python", ("#",), text, 1, "AMP001")
    assert last.text == "  # gpulint: ignore[AMP001]"
    compile(_apply(text, last), "t.py", "exec")
    # a middle line of a continued statement has no safe place on or just above it
    three = "x = 1 + \\\n    2 + \\\n    3\n"
    assert actions.line_suppression("python", ("#",), three, 1, "AMP001") is None
    # a line that opens a multi-line string: above; a line inside it: nowhere
    opener = actions.line_suppression("python", ("#",), text, 2, "AMP001")
    assert opener.text.startswith("# gpulint") and opener.start_char == 0
    assert actions.line_suppression("python", ("#",), text, 3, "AMP001") is None
    assert actions.line_suppression("python", ("#",), text, 5, "AMP001").text == "  # gpulint: ignore[AMP001]"


def test_yaml_suppression_appended_and_effective():
    files = {"train.py": ACCEL_TRAIN, "accelerate_config.yaml": ACCEL_CONFIG}
    assert ("AMP001", 3) in codes(files, fields=("code", "line"), path="accelerate_config.yaml")
    edit = actions.line_suppression("yaml", ("#",), ACCEL_CONFIG, 2, "AMP001")
    new = _apply(ACCEL_CONFIG, edit)
    assert new.splitlines()[2] == 'mixed_precision: "no"  # gpulint: ignore[AMP001]'
    assert "AMP001" not in [c for c, _ in codes({**files, "accelerate_config.yaml": new}, fields=("code", "line"), path="accelerate_config.yaml")]


def test_dockerfile_comments_only_on_their_own_line():
    text = "# syntax=docker/dockerfile:1\nFROM pytorch/pytorch\nENV NCCL_P2P_DISABLE=1\n"
    edit = actions.line_suppression("dockerfile", ("#",), text, 2, "NET001")
    assert _apply(text, edit).splitlines()[2:4] == ["# gpulint: ignore[NET001]", "ENV NCCL_P2P_DISABLE=1"]
    fedit = actions.file_suppression("dockerfile", ("#",), text, "NET001")
    assert _apply(text, fedit).splitlines()[:2] == ["# syntax=docker/dockerfile:1", "# gpulint: ignore-file[NET001]"]


def test_shell_terraform_toml_unsafe_places_and_json_notebooks_have_none():
    sh = "#!/bin/bash\ntorchrun \\\n  --nproc_per_node 8 \\\n  train.py\ncat <<EOF > env\nNCCL_DEBUG=INFO\nEOF\n"
    assert actions.line_suppression("shell", ("#",), sh, 1, "X001").text == "# gpulint: ignore[X001]\n"  # first line of the command
    assert actions.line_suppression("shell", ("#",), sh, 2, "X001") is None
    assert actions.line_suppression("shell", ("#",), sh, 3, "X001").text == "  # gpulint: ignore[X001]"
    assert actions.line_suppression("shell", ("#",), sh, 5, "X001") is None  # heredoc body
    assert actions.file_suppression("shell", ("#",), sh, "X001").start_line == 1  # after the shebang
    tf = 'resource "aws_instance" "gpu" {\n  instance_type = "p4d.24xlarge"\n  user_data = <<-EOT\n    torchrun train.py\n  EOT\n}\n'
    assert actions.line_suppression("terraform", ("#", "//"), tf, 1, "X001").text == "  # gpulint: ignore[X001]"
    assert actions.line_suppression("terraform", ("#", "//"), tf, 3, "X001") is None
    toml = 'a = """\nline\n"""\nb = 1\n'
    assert actions.line_suppression("toml", ("#",), toml, 1, "X001") is None
    assert actions.line_suppression("toml", ("#",), toml, 3, "X001") is not None
    assert actions.line_suppression("json", (), '{"fp16": false}\n', 0, "X001") is None
    assert actions.file_suppression("json", (), '{"fp16": false}\n', "X001") is None
    assert actions.line_suppression("notebook", ("#",), "{}\n", 0, "X001") is None


LOADER = """\
from torch.utils.data import DataLoader
loader = DataLoader(ds, num_workers=4)
model = model.cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
from torchvision.datasets import ImageFolder  # the images it loads (decoded on the host: IO001/IO002 apply)
ds = ImageFolder("/data/train")
"""


def _apply_fix(text: str, qf: actions.QuickFix) -> str:
    for e in sorted(qf.edits, key=lambda e: (e.start_line, e.start_char), reverse=True):
        text = _apply(text, actions.Edit(e.start_line, e.start_char, e.end_line, e.end_char, e.text))
    return text


def test_quick_fix_is_the_findings_fix_against_the_current_text():
    f = next(f for f in scan_files({"train.py": LOADER}).findings if f.code == "IO002")
    qf = actions.finding_fix(f, lambda p: LOADER, lambda p: "python")
    assert qf.safe and qf.title == "Add pin_memory=True to the DataLoader call (IO002)"
    fixed = _apply_fix(LOADER, qf)
    assert "DataLoader(ds, num_workers=4, pin_memory=True)" in fixed
    assert "IO002" not in [c for c, _ in codes({"train.py": fixed}, fields=("code", "line"), path="train.py")]
    # the buffer moved on since the scan: the fix no longer applies and is not offered
    assert actions.finding_fix(f, lambda p: "x = 1\n", lambda p: "python") is None
    assert actions.finding_fix(f.with_(fix=None), lambda p: LOADER, lambda p: "python") is None


def test_unsafe_quick_fix_says_so_in_its_title():
    text = LOADER.replace(", num_workers=4", "")
    f = next(f for f in scan_files({"train.py": text}).findings if f.code == "IO001")
    qf = actions.finding_fix(f, lambda p: text, lambda p: "python")
    assert not qf.safe and qf.title == "Set num_workers=4 (tune it to the CPU cores per GPU) (IO001, unsafe: may change behaviour)"
    md = convert.hover_markdown([f])
    assert "**Fix:** Set num_workers=4" in md and "unsafe: worker processes need a picklable dataset" in md


# -- the worker ----------------------------------------------------------------------------------
def test_worker_scans_latest_snapshot_and_drops_overtaken_results():
    started, release = threading.Event(), threading.Event()
    scanned, delivered = [], []
    done = threading.Condition()

    def scan(snap):
        scanned.append(snap)
        if snap == "A":
            started.set()
            release.wait(60)
        return snap.lower()

    def deliver(snap, result):
        with done:
            delivered.append(result)
            done.notify_all()

    w = LatestWins(scan, deliver)
    try:
        w.submit("A")
        assert started.wait(60)
        w.submit("B")
        w.submit("C")  # replaces B before B was ever scanned
        release.set()
        with done:
            assert done.wait_for(lambda: "c" in delivered, 60)
        assert scanned == ["A", "C"] and delivered == ["c"]

        def boom(snap):
            raise RuntimeError("bug")

        w._scan = boom
        w.submit("D")  # a failing scan is logged, the worker lives on
        w._scan = scan
        w.submit("E")
        with done:
            assert done.wait_for(lambda: "e" in delivered, 60)
    finally:
        w.stop()


# -- the server over stdio ------------------------------------------------------------------------
def _server(root: Path, extra_env: dict | None = None, argv: list[str] | None = None) -> LspClient:
    import os

    env = {**os.environ, **(extra_env or {})}
    return LspClient(argv or [sys.executable, "-m", "gpulint", "lsp"], cwd=root, env=env)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")


def _codes_of(diags: list[dict]) -> list[str]:
    return [d["code"] for d in diags]


@pytest.mark.slow
def test_session_open_change_save_hover_action_shutdown(tmp_path):
    # the launcher sizes the spend (8 GPUs): AMP001 on an unknown model is a warning then, not advice
    _write(tmp_path, {"train.py": TRAIN_FP32, "run.sh": "torchrun --nproc_per_node 8 train.py\n", "README.md": "hello\n"})
    c = _server(tmp_path)
    try:
        init = c.initialize(tmp_path)
        caps = init["capabilities"]
        assert caps["hoverProvider"] and caps["codeActionProvider"] and caps["textDocumentSync"]["save"] is not None
        uri = c.open(tmp_path / "train.py")
        diags = c.wait_diagnostics(uri, lambda d: "AMP001" in _codes_of(d), "AMP001 after didOpen")
        amp = next(d for d in diags if d["code"] == "AMP001")
        assert amp["range"]["start"]["line"] == 5 and amp["severity"] == 2 and amp["source"] == "gpulint"
        assert amp["data"]["name"] == "missing-mixed-precision" and "codeDescription" not in amp

        hover = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": amp["range"]["start"]})
        assert hover["contents"]["kind"] == "markdown"
        guidance = next(f.guidance for f in scan_files({"train.py": TRAIN_FP32}).findings if f.code == "AMP001")
        assert "AMP001" in hover["contents"]["value"] and guidance.strip() in hover["contents"]["value"]
        assert c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}) is None

        acts = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": amp["range"],
                                                     "context": {"diagnostics": [amp]}})
        by_title = {a["title"]: a for a in acts}
        line_act = by_title["Suppress AMP001 on this line"]
        assert line_act["kind"] == "quickfix"
        (edit,) = line_act["edit"]["changes"][uri]
        assert edit["newText"] == "  # gpulint: ignore[AMP001]" and edit["range"]["start"] == {"line": 5, "character": 19}
        (fedit,) = by_title["Suppress AMP001 in this file"]["edit"]["changes"][uri]
        assert fedit["newText"] == "# gpulint: ignore-file[AMP001]\n" and fedit["range"]["start"] == {"line": 0, "character": 0}

        # the unsaved buffer decides: autocast typed in, AMP001 goes away before any save
        c.change_full(uri, TRAIN_AMP, 2)
        c.wait_diagnostics(uri, lambda d: "AMP001" not in _codes_of(d), "AMP001 cleared after didChange")
        assert (tmp_path / "train.py").read_text() == TRAIN_FP32

        # saving re-scans at once and reads what changed on disk meanwhile (a script the editor never opened)
        (tmp_path / "train.py").write_text(TRAIN_AMP, encoding="utf-8")
        (tmp_path / "pretrain.py").write_text(TRAIN_FP32, encoding="utf-8")
        c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        other = (tmp_path / "pretrain.py").resolve().as_uri()
        c.wait_diagnostics(other, lambda d: "AMP001" in _codes_of(d), "AMP001 on the new script after didSave")
        assert "AMP001" not in _codes_of(c.diagnostics[uri])

        c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_quick_fix_code_action_edits_the_unsaved_buffer(tmp_path):
    _write(tmp_path, {"train.py": LOADER})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        uri = c.open(tmp_path / "train.py")
        diags = c.wait_diagnostics(uri, lambda d: "IO002" in _codes_of(d), "IO002 after didOpen")
        io2 = next(d for d in diags if d["code"] == "IO002")
        assert io2["data"]["has_fix"] is True
        # an unsaved edit above the call: the fix is worked out against the buffer, not the file on disk
        buf = "# tuned for p4d\n" + LOADER
        c.change_full(uri, buf, 2)
        diags = c.wait_diagnostics(uri, lambda d: any(x["code"] == "IO002" and x["range"]["start"]["line"] == 2 for x in d),
                                   "IO002 moved one line down")
        io2 = next(d for d in diags if d["code"] == "IO002")
        acts = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": io2["range"],
                                                     "context": {"diagnostics": [io2]}})
        fix = next(a for a in acts if a["title"] == "Add pin_memory=True to the DataLoader call (IO002)")
        assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
        (edit,) = fix["edit"]["changes"][uri]
        assert edit["newText"] == ", pin_memory=True"
        assert edit["range"]["start"] == edit["range"]["end"] == {"line": 2, "character": 37}
        unsafe = [a for a in acts if "IO001" in a["title"]]
        assert unsafe == []  # num_workers=4 is set: no IO001 here
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_incremental_change_and_utf16_positions(tmp_path):
    _write(tmp_path, {"train.py": TRAIN_FP32})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        uri = c.open(tmp_path / "train.py")
        c.wait_diagnostics(uri, lambda d: "AMP001" in _codes_of(d))
        # insert a line with an emoji above the loop: AMP001 moves down a line
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}}, "text": 'tag = "😋"\n'}]})
        diags = c.wait_diagnostics(uri, lambda d: any(x["code"] == "AMP001" and x["range"]["start"]["line"] == 6 for x in d))
        assert diags
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_cross_file_update_from_yaml_buffer(tmp_path):
    _write(tmp_path, {"train.py": ACCEL_TRAIN, "accelerate_config.yaml": ACCEL_CONFIG})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        py_uri = c.open(tmp_path / "train.py")
        yaml_uri = c.open(tmp_path / "accelerate_config.yaml", language="yaml")
        diags = c.wait_diagnostics(yaml_uri, lambda d: "AMP001" in _codes_of(d), "AMP001 on the accelerate config")
        assert next(d for d in diags if d["code"] == "AMP001")["range"]["start"]["line"] == 2
        c.wait_diagnostics(py_uri, lambda d: True)  # the script was published too (it may be clean)
        c.change_full(yaml_uri, ACCEL_CONFIG.replace('"no"', "bf16"), 2)
        c.wait_diagnostics(yaml_uri, lambda d: "AMP001" not in _codes_of(d), "AMP001 gone after the YAML says bf16")
        assert "AMP001" not in _codes_of(c.diagnostics.get(py_uri, []))
        # and back: the script is judged by the config buffer again
        c.change_full(yaml_uri, ACCEL_CONFIG, 3)
        c.wait_diagnostics(yaml_uri, lambda d: "AMP001" in _codes_of(d), "AMP001 back")
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_cross_file_finding_carries_related_information(tmp_path):
    _write(tmp_path, {"train.py": TRAIN_FP32, "scripts/launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n"})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        uri = c.open(tmp_path / "train.py")
        diags = c.wait_diagnostics(uri, lambda d: "AMP001" in _codes_of(d))
        amp = next(d for d in diags if d["code"] == "AMP001")
        related = amp.get("relatedInformation") or []
        assert any(r["location"]["uri"].endswith("scripts/launch.sh") and r["location"]["range"]["start"]["line"] == 1 for r in related)
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_syntax_error_is_sys001_and_server_survives(tmp_path):
    _write(tmp_path, {"train.py": TRAIN_FP32})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        uri = c.open(tmp_path / "train.py")
        c.wait_diagnostics(uri, lambda d: "AMP001" in _codes_of(d))
        c.change_full(uri, TRAIN_FP32.replace("loss.backward()", "loss.backward(("), 2)
        diags = c.wait_diagnostics(uri, lambda d: "SYS001" in _codes_of(d), "SYS001 for the syntax error")
        sys001 = next(d for d in diags if d["code"] == "SYS001")
        # nothing launches or imports the broken file, so it feeds no workload: Information, not Error
        assert sys001["severity"] == 3 and "could not be parsed" in sys001["message"]
        c.change_full(uri, TRAIN_FP32, 3)
        c.wait_diagnostics(uri, lambda d: "SYS001" not in _codes_of(d) and "AMP001" in _codes_of(d), "recovered")
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_bad_config_is_a_message_and_keeps_last_good_diagnostics(tmp_path):
    _write(tmp_path, {"train.py": TRAIN_FP32})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        uri = c.open(tmp_path / "train.py")
        c.wait_diagnostics(uri, lambda d: "AMP001" in _codes_of(d))
        (tmp_path / ".gpulint.toml").write_text("[severity]\nNOPE999 = \"error\"\n", encoding="utf-8")
        c.change_full(uri, TRAIN_AMP, 2)
        c.wait_until(lambda: any("NOPE999" in m["message"] for m in c.messages("window/showMessage")), "a showMessage naming the bad key")
        msg = next(m for m in c.messages("window/showMessage") if "NOPE999" in m["message"])
        assert msg["type"] == 1 and ".gpulint.toml" in msg["message"]
        assert "AMP001" in _codes_of(c.diagnostics[uri])  # last good results stay
        # still serving: fix the config, save, the buffer's autocast counts again
        (tmp_path / ".gpulint.toml").write_text("ignore = [\"IO\"]\n", encoding="utf-8")
        c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        c.wait_diagnostics(uri, lambda d: "AMP001" not in _codes_of(d), "diagnostics after the config is fixed")
        assert c.shutdown() == 0
    finally:
        c.kill()


BOOM_PLUGIN = '''
from gpulint.hookspecs import hookimpl
from gpulint.core.model import Severity
from gpulint.rule import Rule


class Boom(Rule):
    """A rule that always raises (tests that the language server survives it)."""

    code = "ZZZ001"
    name = "always-raises"
    severity = Severity.WARNING
    family = "ZZZ"

    def check_workload(self, wl, ctx):
        raise RuntimeError("kaboom")


@hookimpl
def gpulint_rules():
    return [Boom]
'''


@pytest.mark.slow
def test_rule_that_raises_is_sys002(tmp_path):
    plugdir = tmp_path / "plug"
    _write(plugdir, {"boomplugin.py": BOOM_PLUGIN})
    repo = tmp_path / "repo"
    _write(repo, {"train.py": TRAIN_FP32})
    argv = [sys.executable, "-c", "import sys; from gpulint.cli.main import main; from gpulint.run.plugins import PluginHost; "
            "sys.exit(main(['lsp'], host=PluginHost(extra_modules=['boomplugin'])))"]
    import os

    c = _server(repo, {"PYTHONPATH": os.pathsep.join([str(plugdir), os.environ.get("PYTHONPATH", "")])}, argv)
    try:
        c.initialize(repo)
        uri = c.open(repo / "train.py")
        diags = c.wait_diagnostics(uri, lambda d: "SYS002" in _codes_of(d), "SYS002 for the raising rule")
        assert any("ZZZ001" in d["message"] and "kaboom" in d["message"] for d in diags if d["code"] == "SYS002")
        assert "AMP001" in _codes_of(diags)  # the other rules still ran
        assert c.shutdown() == 0
    finally:
        c.kill()


@pytest.mark.slow
def test_exit_without_shutdown_is_exit_code_1(tmp_path):
    _write(tmp_path, {"train.py": TRAIN_FP32})
    c = _server(tmp_path)
    try:
        c.initialize(tmp_path)
        c.notify("exit", None)
        assert c.proc.wait(timeout=120) == 1
    finally:
        c.kill()
