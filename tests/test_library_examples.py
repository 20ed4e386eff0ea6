"""A package the repository ships never supplies precision or GPU evidence to one of its examples
(link.workloads._new_workload / shipped_package): the example is judged on its own code, as a scan of its folder
or a user with the package installed would judge it. Fixture: fixtures/wl-library-examples (see its FIXTURE.md)."""
import shutil

from conftest import FIXTURES
from gpulint.testing import scan_tree

REPO = FIXTURES / "wl-library-examples"


def _workloads(root):
    result, workloads = scan_tree(root)
    return result, {w.entrypoint: w for w in workloads}


def _kinds_from(wl, folder: str) -> set[str]:
    return {f.kind for f in wl.facts if f.loc.path.startswith(folder)}


def test_an_examples_precision_and_gpu_are_its_own_not_the_packages():
    result, wls = _workloads(REPO)
    resnet, cpu = wls["examples/imagenet_resnet50.py"], wls["examples/cpu_regression.py"]
    for wl in (resnet, cpu):
        assert not _kinds_from(wl, "trainkit/") & {"precision", "uses_gpu"}
        assert "trains" in _kinds_from(wl, "trainkit/")  # the package's training loop still runs the example's training
        assert any("trainkit/ is the package the repository ships" in r for r in wl.reasons)
    # the ResNet example moves the model to the GPU itself and never passes amp_dtype: an fp32 run
    amp = [f for f in result.findings if f.code == "AMP001" and f.workload == "examples/imagenet_resnet50.py"]
    assert len(amp) == 1
    # the CPU example's only CUDA evidence was the library's own probe: no GPU rule speaks
    assert not [f for f in result.findings if f.workload == "examples/cpu_regression.py"]


def test_the_maintainers_entry_point_keeps_the_packages_facts():
    result, wls = _workloads(REPO)
    tool = wls["tools/train_bf16.py"]
    assert {"precision", "uses_gpu"} <= _kinds_from(tool, "trainkit/")
    # the library's autocast takes its dtype from the caller: undecided, so AMP001 stays silent
    assert not [f for f in result.findings if f.workload == "tools/train_bf16.py" and f.code.startswith("AMP")]


def test_a_package_nothing_packages_is_the_repositorys_own_code(tmp_path):
    """Without setup.py / pyproject.toml / setup.cfg the folder is not shipped: its facts are the example's."""
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    (root / "setup.py").unlink()
    result, wls = _workloads(root)
    resnet = wls["examples/imagenet_resnet50.py"]
    assert {"precision", "uses_gpu"} <= _kinds_from(resnet, "trainkit/")
    assert not [f for f in result.findings if f.code == "AMP001" and f.workload == "examples/imagenet_resnet50.py"]

