"""Hostile and broken input (issue 10): never crash, never hang, bounded memory,
nothing lost. The corpus is generated (tests/adversarial/cases.py); each scan
runs the CLI as a user would, in a subprocess whose peak memory is measured.

A hang is a scan that does not finish within the subprocess timeout; no test
asserts a duration.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adversarial import cases as adv
from conftest import FIXTURES

HANG = 600  # seconds: a scan still running then is a hang
MAX_RSS_MB = 500  # per process (the scan and each worker): the scan as a whole stays under 1 GB


def run_measured(*args, cwd=None, env=None, prefix=()):
    """The CLI in a subprocess; returns (proc, peak RSS in MB of the largest of its processes)."""
    wrapper = textwrap.dedent("""
        import resource, subprocess, sys
        p = subprocess.run(sys.argv[1:], capture_output=True)
        sys.stdout.buffer.write(p.stdout)
        sys.stderr.buffer.write(p.stderr)
        sys.stderr.write("\\nMAXRSS_KB=%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        sys.exit(p.returncode)
    """)
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    proc = subprocess.run([*prefix, sys.executable, "-c", wrapper, sys.executable, "-m", "gpulint", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=full_env, timeout=HANG)
    rss = int(proc.stderr.rsplit("MAXRSS_KB=", 1)[1].split()[0]) / 1024 if "MAXRSS_KB=" in proc.stderr else 0.0
    return proc, rss


def scan_json(root, *args, **kw):
    """A scan that must succeed: (report, peak RSS MB, process)."""
    proc, rss = run_measured("scan", root, "--format", "json", "--exit-zero", *args, **kw)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout), rss, proc


def key(f):
    return (f["code"], f["path"], f["line"], f["column"], f["message"], f["severity"], f.get("workload"))


# -- the content corpus: every hostile file beside real-shaped fixture repositories ----------------------------
@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("adversarial") / "repo"
    cases = adv.build(root)
    base = tmp_path_factory.mktemp("adversarial-base") / "repo"
    adv.base(base)
    expected, _, _ = scan_json(base)
    return root, cases, sorted(key(f) for f in expected["findings"])


@pytest.fixture(scope="module", params=[1, 2], ids=["jobs1", "jobs2"])
def scanned(request, corpus):
    root, cases, expected = corpus
    data, rss, proc = scan_json(root, "--jobs", str(request.param))
    return data, rss, proc, cases, expected


def test_scan_completes_without_a_crash_or_a_rule_error(scanned):
    data, rss, proc, _, _ = scanned
    assert not [f for f in data["findings"] if f["code"] == "SYS002"]
    assert rss < MAX_RSS_MB, f"peak RSS {rss:.0f} MB"


def test_every_other_finding_is_unchanged(scanned):
    data, _, _, _, expected = scanned
    got = sorted(key(f) for f in data["findings"] if not f["path"].startswith("h/"))
    assert got == expected


def test_hostile_files_fail_no_ci(scanned):
    """Nothing links the hostile files to a workload: every SYS001 is info (exit 0 at the default fail-on)."""
    data, _, _, _, _ = scanned
    assert {f["severity"] for f in data["findings"] if f["path"].startswith("h/")} == {"info"}


@pytest.mark.parametrize("case", adv.content_cases(), ids=lambda c: f"{c.item}-{c.name}")
def test_case(scanned, case):
    data, _, _, _, _ = scanned
    by_path: dict[str, list[dict]] = {}
    for f in data["findings"]:
        by_path.setdefault(f["path"], []).append(f)
    for path, needle in case.sys001.items():
        found = by_path.get(path, [])
        assert [f["code"] for f in found] == ["SYS001"], (path, found)
        assert needle in found[0]["message"], found[0]["message"]
    for path in case.silent:
        assert path not in by_path, by_path[path]


# -- wrong types in every Kubernetes, SkyPilot, Azure ML and SageMaker field ------------------------------------
def test_wrong_types_in_every_field_are_read_without_an_error(tmp_path):
    adv.write(tmp_path, adv.wrong_type_cases())
    data, rss, _ = scan_json(tmp_path)
    assert not [f for f in data["findings"] if f["code"] in ("SYS001", "SYS002")]
    assert rss < MAX_RSS_MB


# -- isolation: a parser that crashes, stalls or runs out of memory costs only its own file ----------------------
CHAOS_PLUGIN = '''
import os, signal, time
from gpulint.hookspecs import hookimpl
from gpulint.read.kinds import Extractor

def _chaos(source):
    if "CRASH_HERE" in source.text:
        os.kill(os.getpid(), signal.SIGSEGV)  # what libcst's native parser does on a stack overflow
    if "STALL_HERE" in source.text:
        time.sleep(3600)
    if "SPIN_HERE" in source.text:
        while True:
            pass
    if "HOG_HERE" in source.text:
        hog = bytearray(64 * 1024 ** 3)  # past the worker's address-space limit
    return []

@hookimpl
def gpulint_fact_extractors():
    return [Extractor("chaos", ("python",), _chaos)]
'''

CHAOS_SCAN = '''
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import chaos_plugin
from gpulint.core.config import load_config
from gpulint.run.engine import ScanRequest, Scanner
from gpulint.run.plugins import PluginHost
root = Path(sys.argv[1])
host = PluginHost(extra_modules=[chaos_plugin])
result, _ = Scanner(host, load_config(None, root)).scan(ScanRequest(paths=[root], jobs=int(sys.argv[3])))
print(json.dumps([f.to_json() for f in result.findings]))
'''


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_crash_a_stall_and_a_memory_hog_become_sys001_and_the_scan_goes_on(tmp_path, jobs):
    repo = tmp_path / "repo"
    for name in ("pytorch-fp32-loop", "accelerate-no-mp"):
        adv.base_one(repo, name)
    adv.write(repo, {"chaos/crash.py": "import torch  # CRASH_HERE\n", "chaos/stall.py": "import torch  # STALL_HERE\n",
                     "chaos/hog.py": "import torch  # HOG_HERE\n", "chaos/spin.py": "import torch  # SPIN_HERE\n",
                     ".gpulint.toml": "file-timeout = 4\n"})
    plugin_dir = tmp_path / "plugin"
    adv.write(plugin_dir, {"chaos_plugin.py": CHAOS_PLUGIN})
    clean = tmp_path / "clean"
    for name in ("pytorch-fp32-loop", "accelerate-no-mp"):
        adv.base_one(clean, name)
    proc = subprocess.run([sys.executable, "-c", CHAOS_SCAN, str(clean), str(plugin_dir), str(jobs)], capture_output=True, text=True, timeout=HANG)
    expected = sorted(key(f) for f in json.loads(proc.stdout))
    proc = subprocess.run([sys.executable, "-c", CHAOS_SCAN, str(repo), str(plugin_dir), str(jobs)], capture_output=True, text=True, timeout=HANG)
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout)
    by_path = {f["path"]: f for f in findings if f["path"].startswith("chaos/")}
    assert "the parser crashed (SIGSEGV" in by_path["chaos/crash.py"]["message"]
    assert "did not finish in 20 s (5 x file-timeout): stalled" in by_path["chaos/stall.py"]["message"]
    assert "file-timeout" in by_path["chaos/spin.py"]["message"]  # 4 s of CPU time, or a stall on a very busy machine
    assert "too large for the 'chaos' reader" in by_path["chaos/hog.py"]["message"]
    assert {f["code"] for f in by_path.values()} == {"SYS001"}
    assert sorted(key(f) for f in findings if not f["path"].startswith("chaos/")) == expected


# -- discovery: symlinks, names, permissions -----------------------------------------------------------------
def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_symlink_loops_are_skipped(tmp_path):
    adv.base_one(tmp_path, "pytorch-fp32-loop")
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    (tmp_path / "loop").symlink_to(".", target_is_directory=True)
    data, _, _ = scan_json(tmp_path)
    assert {f["path"] for f in data["findings"]} == {"pytorch-fp32-loop/train.py"}


@pytest.mark.parametrize("in_git", [False, True])
def test_symlinks_never_lead_out_of_the_root(tmp_path, in_git):
    outside = tmp_path / "outside"
    adv.write(outside, {"cfg.yaml": "optimizer: {lr: 0.1\n", "train.py": (FIXTURES / "pytorch-fp32-loop" / "train.py").read_text()})
    root = tmp_path / "root"
    adv.write(root, {"ok.yaml": "a: 1\n"})
    (root / "linked.yaml").symlink_to(outside / "cfg.yaml")
    (root / "train.py").symlink_to(outside / "train.py")
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    if in_git:
        _git(root, "init", "-q")
        _git(root, "add", "-A")  # git tracks the symlinks themselves
    data, _, _ = scan_json(root)
    assert data["findings"] == []


def test_a_symlink_inside_the_root_is_read(tmp_path):
    adv.write(tmp_path, {"real/train.py": (FIXTURES / "pytorch-fp32-loop" / "train.py").read_text()})
    (tmp_path / "train.py").symlink_to("real/train.py")
    data, _, _ = scan_json(tmp_path)
    assert {f["path"] for f in data["findings"] if f["code"] == "AMP001"} == {"real/train.py", "train.py"}


@pytest.mark.parametrize("in_git", [False, True])
def test_a_file_name_that_is_not_utf8_is_reported(tmp_path, in_git):
    name = b"caf\xe9.py"
    train = (FIXTURES / "pytorch-fp32-loop" / "train.py").read_bytes()
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as fh:
        fh.write(train)
    if in_git:
        _git(tmp_path, "init", "-q")
    for fmt in ("json", "text", "sarif", "github"):
        proc, _ = run_measured("scan", tmp_path, "--format", fmt, "--exit-zero")
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert ("caf%25E9.py" if fmt == "github" else "caf%E9.py") in proc.stdout  # workflow commands escape %
    data, _, _ = scan_json(tmp_path)
    assert {(f["code"], f["path"]) for f in data["findings"]} >= {("AMP001", "caf%E9.py")}


def test_a_fifo_named_like_source_does_not_hang_the_scan(tmp_path):
    adv.base_one(tmp_path, "pytorch-fp32-loop")
    os.mkfifo(tmp_path / "train_pipe.py")
    data, _, _ = scan_json(tmp_path)
    assert {f["path"] for f in data["findings"]} == {"pytorch-fp32-loop/train.py"}


#: as root, permissions are enforced only without the capabilities that override them
_NO_DAC = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search", "--")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("in_git", [False, True])
def test_an_unreadable_folder_is_reported_and_skipped(tmp_path, in_git):
    prefix: tuple = ()
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv: chmod 000 does not stop root")
        prefix = _NO_DAC
    root = tmp_path / "repo"
    adv.base_one(root, "pytorch-fp32-loop")
    adv.write(root, {"secret/cfg.yaml": "a: 1\n", "secret/deeper/train.py": "import torch\n"})
    if in_git:
        _git(root, "init", "-q")
        _git(root, "add", "-A")
    (root / "secret").chmod(0)
    try:
        data, _, _ = scan_json(root, prefix=prefix)
    finally:
        (root / "secret").chmod(0o755)
    found = {(f["code"], f["path"], f["severity"]) for f in data["findings"]}
    assert ("AMP001", "pytorch-fp32-loop/train.py", "warning") in found
    (sys001,) = [f for f in data["findings"] if f["code"] == "SYS001"]
    assert sys001["path"] == "secret" and "Permission denied" in sys001["message"] and sys001["severity"] == "info"


# -- configuration files --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, text, message", [
    (".gpulint.yaml", "exclude: " + "[" * 5000 + "]" * 5000 + "\n", "nesting deeper than 200"),
    (".gpulint.yaml", "x: " + "- " * 3000 + "a\n", "invalid YAML"),
    (".gpulint.yaml", "\n".join("  " + l for l in ["anchors:"] + ["  " + b for b in adv._alias_bomb()]).strip() + "\nexclude: *i\n", "too large"),
    (".gpulint.toml", "exclude = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    (".gpulint.toml", "exclude = [" + ", ".join(['"' + "x" * 1000 + '"'] * 50) + "]\nselect = [" + "[" * 100 + "]" * 100 + "]\n",
     "is not of type"),
])
def test_a_hostile_configuration_is_a_short_message_not_a_traceback(tmp_path, name, text, message):
    adv.base_one(tmp_path, "pytorch-fp32-loop")
    (tmp_path / name).write_text(text)
    proc, rss = run_measured("scan", tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.split("\nMAXRSS_KB=")[0]
    assert message in err and "Traceback" not in err and "internal error" not in err, err
    assert len(err) < 2000  # the message quotes the start of a value, never the whole structure
    assert rss < MAX_RSS_MB


# -- nothing in a scanned repository is ever executed -------------------------------------------------------
def test_no_repository_code_runs(tmp_path):
    marker = tmp_path / "EXECUTED"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    payload = (f"import socket, pathlib\npathlib.Path({str(marker)!r}).write_text(__file__)\n"
               f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\n")
    repo = tmp_path / "repo"
    adv.write(repo, {
        "train.py": "import torch\n" + payload + "for x in loader:\n    model(x).sum().backward()\n",
        "setup.py": "import torch\n" + payload,
        "conftest.py": "import torch\n" + payload,
        "yaml.py": payload, "libcst/__init__.py": payload, "pathspec.py": payload, "sitecustomize.py": payload,
        "tags.yaml": f"a: !!python/object/apply:os.system ['touch {marker}']\nb: !!python/object/apply:socket.create_connection [['127.0.0.1', {port}]]\n",
        "nb.ipynb": adv._nb([adv._code(f"import torch\n!touch {marker}\n%system touch {marker}\nfiles = !touch {marker}\n"),
                             adv._code(f"%%bash\ntouch {marker}\n"), adv._code(payload)]),
        "conf.toml": f"cmd = \"touch {marker}\"\n",
        "run.sh": f"#!/bin/bash\ntouch {marker}\npython train.py\n",
        "Makefile": f"train:\n\ttouch {marker}\n",
    })
    try:
        for jobs in ("1", "2"):
            # from inside the repository, as `python -m gpulint` puts it first on sys.path
            proc, _ = run_measured("scan", ".", "--jobs", jobs, "--exit-zero", cwd=repo)
            assert proc.returncode == 0, proc.stderr
        proc, _ = run_measured("workloads", ".", cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists()
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()


def test_identical_documents_are_never_compared_by_value(monkeypatch):
    """6,000 identical ConfigMaps took 73 s: documents were told apart with == (whole-document
    equality, quadratic over a file). They are told apart by identity (issue 10 item 9)."""
    from gpulint.read.builtin import _yaml_infra
    from gpulint.read.parsers import parse_yaml
    from gpulint.read.yamlnodes import Doc

    compared = []
    monkeypatch.setattr(Doc, "__eq__", lambda self, other: compared.append(1) or self is other)
    text = "".join("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  key: value\n" for _ in range(300))
    text += "---\nname: task\nresources:\n  accelerators: A100:8\nrun: python nowhere.py\n"
    _yaml_infra(parse_yaml(text, "many.yaml"))
    assert compared == []
