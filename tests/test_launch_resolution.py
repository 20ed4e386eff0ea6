"""Launches whose script is not one literal word: a `${X:-default}` / `${X:=default}`, a variable assigned in the
branches of an `if`, a `cd` before the launch, and console scripts the repository's own packaging declares
(``fairseq-train`` = ``fairseq_cli.train:cli_main``). Reader facts first, then the linker end to end."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from gpulint.read.shell.scanner import read_shell
from gpulint.testing import scan_tree, write_tree

TRAIN = """\
import torch

model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(10):
    loss = model(torch.randn(32, 1024).cuda()).pow(2).mean()
    loss.backward()
    opt.step()
"""

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def launches(text: str, path: str = "scripts/run.sh") -> list:
    return [f for f in read_shell(textwrap.dedent(text), path) if f.kind == "launch"]


def one_launch(text: str, path: str = "scripts/run.sh"):
    out = launches(text, path)
    assert len(out) == 1, out
    return out[0]


def workloads(tmp_path: Path, files: dict[str, str]) -> dict:
    write_tree(tmp_path, files)
    _, wls = scan_tree(tmp_path)
    return {w.entrypoint: w for w in wls}


# ---------------------------------------------------------------- reader: candidates of a script word

def test_default_of_an_unset_variable_is_the_script():
    launch = one_launch("python ${TRAIN_SCRIPT:-train.py} --epochs 1\n")
    assert launch.value["script"] == "train.py"
    assert launch.attrs["overridable"] == {"script": "TRAIN_SCRIPT"}
    assert "script_candidates" not in launch.attrs  # one value: the script itself says it


def test_if_else_assignments_are_the_candidates():
    launch = one_launch("""\
        if [ "$MODE" = ft ]; then
          SCRIPT=finetune.py
        else
          SCRIPT=pretrain.py
        fi
        torchrun --nproc_per_node 8 $SCRIPT --lr 1e-4
        """)
    assert launch.value["script"] is None  # which one runs is decided at run time
    assert launch.value["nproc_per_node"] == 8
    assert launch.attrs["script_candidates"] == [
        {"script": "finetune.py", "var": "SCRIPT", "line": 2},
        {"script": "pretrain.py", "var": "SCRIPT", "line": 4},
    ]
    assert "script_candidates_open" not in launch.attrs


def test_elif_branches_and_a_quoted_word():
    launch = one_launch("""\
        if [ "$A" ]; then SCRIPT=a.py
        elif [ "$B" ]; then SCRIPT=b.py
        else SCRIPT=c.py
        fi
        python "$SCRIPT"
        """)
    assert [c["script"] for c in launch.attrs["script_candidates"]] == ["a.py", "b.py", "c.py"]


def test_branch_over_a_default_keeps_the_default_as_a_candidate():
    launch = one_launch("""\
        SCRIPT=${SCRIPT:-train.py}
        if [ -n "$FT" ]; then SCRIPT=finetune.py; fi
        torchrun $SCRIPT
        """)
    assert launch.value["script"] is None
    assert launch.attrs["script_candidates"] == [
        {"script": "train.py", "var": "SCRIPT", "line": 1, "default_of": "SCRIPT"},
        {"script": "finetune.py", "var": "SCRIPT", "line": 2},
    ]


def test_colon_equals_default_then_a_branch():
    launch = one_launch("""\
        : ${SCRIPT:=examples/train.py}
        if [ "$X" = 1 ]; then
          SCRIPT=examples/other.py
        fi
        torchrun $SCRIPT
        """)
    cands = launch.attrs["script_candidates"]
    assert cands[0] == {"script": "examples/train.py", "var": "SCRIPT", "line": 1, "default_of": "SCRIPT"}
    assert cands[1] == {"script": "examples/other.py", "var": "SCRIPT", "line": 3}


def test_if_without_else_over_an_unset_variable_leaves_the_environment_open():
    launch = one_launch("""\
        if [ -z "$SCRIPT" ]; then
          SCRIPT=train.py
        fi
        python $SCRIPT
        """)
    assert launch.attrs["script_candidates"] == [{"script": "train.py", "var": "SCRIPT", "line": 2}]
    assert launch.attrs["script_candidates_open"] == ["SCRIPT"]


def test_candidates_through_a_path_and_a_wrapper():
    launch = one_launch("""\
        #SBATCH --nodes=2
        if [ "$BIG" ]; then NAME=big; else NAME=small; fi
        srun python src/train_$NAME.py
        """)
    assert [c["script"] for c in launch.attrs["script_candidates"]] == ["src/train_big.py", "src/train_small.py"]
    assert launch.value["wrapper"]["tool"] == "srun"


@pytest.mark.parametrize("text", [
    # a branch whose value is not decidable: no candidates at all (precision)
    'if [ "$A" ]; then SCRIPT=a.py; else SCRIPT=$(ls *.py | head -1); fi\ntorchrun $SCRIPT\n',
    # a loop: the value depends on the iterations
    'for s in a b; do SCRIPT=$s.py; done\ntorchrun $SCRIPT\n',
    # case arms: not modelled as branches
    'case "$M" in\n  a) SCRIPT=a.py ;;\n  *) SCRIPT=b.py ;;\nesac\ntorchrun $SCRIPT\n',
    # read at run time
    'read SCRIPT\ntorchrun $SCRIPT\n',
])
def test_undecidable_values_give_no_candidates(text):
    launch = one_launch(text)
    assert launch.value["script"] is None and "script_candidates" not in launch.attrs


def test_top_level_assignment_after_the_block_replaces_the_candidates():
    launch = one_launch('if [ "$A" ]; then S=a.py; else S=b.py; fi\nS=c.py\npython $S\n')
    assert launch.value["script"] == "c.py" and "script_candidates" not in launch.attrs


def test_nested_if_candidates_reach_the_outer_block():
    launch = one_launch("""\
        if [ "$A" ]; then
          if [ "$B" ]; then S=ab.py; else S=a.py; fi
        else
          S=b.py
        fi
        python $S
        """)
    assert sorted(c["script"] for c in launch.attrs["script_candidates"]) == ["a.py", "ab.py", "b.py"]


# ---------------------------------------------------------------- reader: cd before a launch

def test_cd_into_the_script_folder_parent_is_recorded():
    launch = one_launch('cd "$(dirname "$0")/.."\npython src/train.py\n')
    assert launch.attrs["cwd"] == {"path": "..", "relative_to": "launcher"}


def test_literal_relative_cd_is_recorded():
    launch = one_launch("cd src\ncd models\npython train.py\n")
    assert launch.attrs["cwd"] == {"path": "src/models"}


@pytest.mark.parametrize("text", [
    "cd /opt/app\npython train.py\n",           # an absolute folder of the machine
    "cd $WORKDIR\npython train.py\n",           # unknown
    'if [ "$A" ]; then cd src; fi\npython train.py\n',  # only on one path
    "cd -\npython train.py\n",
])
def test_other_cds_are_not_recorded(text):
    assert "cwd" not in one_launch(text).attrs


# ---------------------------------------------------------------- reader: programs

def test_unknown_program_with_flags_is_a_program_launch():
    launch = one_launch("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\nsrun fairseq-train data-bin/wmt --arch transformer --fp16\n")
    assert launch.value["tool"] == "program" and launch.value["program"] == "fairseq-train"
    assert launch.value["args"] == ["data-bin/wmt", "--arch", "transformer", "--fp16"]
    assert launch.value["wrapper"]["tool"] == "srun" and launch.target == "slurm"
    assert launch.loc.line == 3


@pytest.mark.parametrize("text", [
    "mkdir -p /data\n",          # a system tool
    "apt-get install -y git\n",
    "nvidia-smi --query-gpu=name --format=csv\n",
    "echo --done\n",
    "my-tool\n",                 # no arguments
    "my-tool build\n",           # no flags
    "./local-bin --flag\n",      # a path: not a console script name
])
def test_ordinary_commands_are_no_program_launch(text):
    assert launches(text) == []


def test_program_launches_do_not_renumber_the_other_launches():
    facts = read_shell("my-prep --fast\nNCCL_DEBUG=INFO torchrun train.py\n", "run.sh")
    [torch] = [f for f in facts if f.kind == "launch" and f.value["tool"] == "torchrun"]
    assert torch.target == "launch1"


def test_programs_only_in_shell_files():
    from gpulint.read.shell.commands import parse_words, Word

    assert parse_words([Word.of(w) for w in ["mt-train", "data", "--fp16"]]) is None
    # a packaged trainer's own command (gpulint.read.packaged) is one wherever it is written: a container's command
    launch = parse_words([Word.of(w) for w in ["fairseq-train", "data", "--fp16"]])
    assert launch is not None and launch.value["tool"] == "program" and launch.value["program"] == "fairseq-train"


# ---------------------------------------------------------------- reader: packaging

SETUP_PY = """\
from setuptools import setup, find_packages

setup(
    name="mt",
    packages=find_packages(),
    entry_points={
        "console_scripts": [
            "mt-train = mt_cli.train:cli_main",
            "mt-eval=mt_cli.evaluate:main",
        ],
    },
)
"""


def test_setup_py_console_scripts():
    from gpulint.read.packaging import read_setup_py

    facts = read_setup_py(SETUP_PY, "setup.py")
    got = [(f.value, f.loc.line) for f in facts]
    assert got == [({"name": "mt-train", "module": "mt_cli.train", "function": "cli_main"}, 8),
                   ({"name": "mt-eval", "module": "mt_cli.evaluate", "function": "main"}, 9)]
    assert all(f.kind == "package.console_script" for f in facts)


def test_setup_py_entry_points_bound_to_a_name_and_a_string_value():
    text = ('import setuptools\nENTRY = {"console_scripts": "tr = pkg.train:main"}\n'
            "setuptools.setup(name='x', entry_points=ENTRY)\n")
    from gpulint.read.packaging import read_setup_py

    [f] = read_setup_py(text, "setup.py")
    assert f.value == {"name": "tr", "module": "pkg.train", "function": "main"} and f.loc.line == 2


@pytest.mark.parametrize("text", [
    # built at run time: never guessed
    'from setuptools import setup\nsetup(entry_points={"console_scripts": [f"{n} = m:{n}" for n in NAMES]})\n',
    # not the packaging call
    'ENTRY = {"console_scripts": ["a = b:c"]}\nprint(ENTRY)\n',
    # gui scripts are no command lines
    'from setuptools import setup\nsetup(entry_points={"gui_scripts": ["a = b:c"]})\n',
    "this is ( not python",
])
def test_setup_py_without_readable_console_scripts(text):
    from gpulint.read.packaging import read_setup_py

    assert read_setup_py(text, "setup.py") == []


def test_pyproject_project_scripts_and_poetry():
    from gpulint.read.packaging import read_pyproject

    text = ('[project]\nname = "x"\n\n[project.scripts]\nx-train = "x.cli.train:main"\n"x-serve" = "x.serve:app.run"\n'
            '\n[tool.poetry.scripts]\npx = "px.main:run"\n')
    got = [(f.value, f.loc.line) for f in read_pyproject(text, "pyproject.toml")]
    assert got == [({"name": "x-train", "module": "x.cli.train", "function": "main"}, 5),
                   ({"name": "x-serve", "module": "x.serve", "function": "app.run"}, 6),
                   ({"name": "px", "module": "px.main", "function": "run"}, 9)]


def test_setup_cfg_options_entry_points():
    from gpulint.read.packaging import read_setup_cfg

    text = ("[metadata]\nname = x\n\n[options.entry_points]\nconsole_scripts =\n    x-train = x.train:main [gpu]\n"
            "    x-eval = x.eval:main\n")
    got = [(f.value, f.loc.line) for f in read_setup_cfg(text, "setup.cfg")]
    assert got == [({"name": "x-train", "module": "x.train", "function": "main"}, 6),
                   ({"name": "x-eval", "module": "x.eval", "function": "main"}, 7)]


def test_bad_packaging_files_never_raise():
    from gpulint.read.packaging import read_pyproject, read_setup_cfg

    assert read_pyproject("[project.scripts\nx = ", "pyproject.toml") == []
    assert read_setup_cfg("[options.entry_points\nconsole_scripts = a = b", "setup.cfg") == []


# ---------------------------------------------------------------- linker

def test_link_default_says_the_environment_may_override_it(tmp_path):
    wls = workloads(tmp_path, {"train.py": TRAIN, "run.sh": 'torchrun --nproc_per_node 8 "${TRAIN_SCRIPT:-train.py}"\n'})
    wl = wls["train.py"]
    assert [l.loc.path for l in wl.launchers] == ["run.sh"]
    assert any("default of ${TRAIN_SCRIPT} (the environment may override it)" in r for r in wl.reasons), wl.reasons


def test_link_the_one_candidate_that_is_a_file(tmp_path):
    wls = workloads(tmp_path, {
        "scripts/pretrain.py": TRAIN,
        "scripts/run.sh": 'if [ "$FT" ]; then S=finetune.py; else S=pretrain.py; fi\ntorchrun $S\n',
    })
    wl = wls["scripts/pretrain.py"]
    assert [l.loc.path for l in wl.launchers] == ["scripts/run.sh"]
    assert any("one of the values of $S" in r and "the only one that is a file" in r for r in wl.reasons), wl.reasons


def test_link_prefers_the_default_and_lists_the_others(tmp_path):
    wls = workloads(tmp_path, {
        "train.py": TRAIN,
        "finetune.py": TRAIN,
        "run.sh": 'S=${S:-train.py}\nif [ "$FT" ]; then S=finetune.py; fi\ntorchrun $S\n',
    })
    wl = wls["train.py"]
    assert [l.loc.path for l in wl.launchers] == ["run.sh"]
    assert any("default of ${S} (the environment may override it)" in r for r in wl.reasons), wl.reasons
    assert any("finetune.py" in u and "run.sh:3" in u for u in wl.unknown), wl.unknown
    assert not wls["finetune.py"].launchers  # not linked twice


def test_several_branch_files_without_a_default_link_none(tmp_path):
    wls = workloads(tmp_path, {
        "a.py": TRAIN, "b.py": TRAIN,
        "run.sh": 'if [ "$X" ]; then S=a.py; else S=b.py; fi\npython $S\n',
    })
    for name in ("a.py", "b.py"):
        assert not wls[name].launchers
        assert any("run.sh:2 runs one of a.py, b.py" in u for u in wls[name].unknown), wls[name].unknown


def test_no_candidate_is_a_file_links_nothing(tmp_path):
    wls = workloads(tmp_path, {"train.py": TRAIN, "run.sh": 'if [ "$X" ]; then S=x.py; else S=y.py; fi\npython $S\n'})
    assert not wls["train.py"].launchers


def test_cd_decides_which_file(tmp_path):
    wls = workloads(tmp_path, {
        "exp/a/scripts/run.sh": 'cd "$(dirname "$0")/.."\ntorchrun --nproc_per_node 8 train.py\n',
        "exp/a/train.py": TRAIN,
        "exp/b/train.py": TRAIN + "# another experiment\n",
    })
    assert [l.loc.path for l in wls["exp/a/train.py"].launchers] == ["exp/a/scripts/run.sh"]
    assert not wls["exp/b/train.py"].launchers


CLI_MODULE = """\
import torch


def cli_main():
    model = torch.nn.Linear(1024, 1024).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(10):
        loss = model(torch.randn(32, 1024).cuda()).pow(2).mean()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    cli_main()
"""


def test_console_script_links_the_module(tmp_path):
    wls = workloads(tmp_path, {
        "setup.py": SETUP_PY,
        "mt_cli/__init__.py": "",
        "mt_cli/train.py": CLI_MODULE,
        "jobs/train.sbatch": "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\nsrun mt-train data-bin --arch big --fp16\n",
    })
    wl = wls["mt_cli/train.py"]
    assert [l.loc.path for l in wl.launchers] == ["jobs/train.sbatch"]
    assert wl.compute is not None and wl.compute.id == "jobs/train.sbatch#slurm"
    assert any("console script mt-train declared in setup.py:8" in r for r in wl.reasons), wl.reasons


def test_console_script_in_a_src_layout_pyproject(tmp_path):
    wls = workloads(tmp_path, {
        "pyproject.toml": '[project]\nname = "x"\n[project.scripts]\nx-train = "xpkg.train:cli_main"\n',
        "src/xpkg/__init__.py": "",
        "src/xpkg/train.py": CLI_MODULE,
        "run.sh": "x-train --epochs 3\n",
    })
    assert [l.loc.path for l in wls["src/xpkg/train.py"].launchers] == ["run.sh"]


def test_undeclared_program_links_nothing(tmp_path):
    wls = workloads(tmp_path, {
        "setup.py": SETUP_PY,
        "mt_cli/__init__.py": "",
        "mt_cli/train.py": CLI_MODULE,
        "run.sh": "other-train data --fp16\n",
    })
    assert not wls["mt_cli/train.py"].launchers


def test_console_script_declared_twice_differently_links_nothing(tmp_path):
    wls = workloads(tmp_path, {
        "setup.py": SETUP_PY,
        "pyproject.toml": '[project.scripts]\nmt-train = "mt_cli.evaluate:main"\n',
        "mt_cli/__init__.py": "",
        "mt_cli/train.py": CLI_MODULE,
        "mt_cli/evaluate.py": CLI_MODULE,
        "run.sh": "mt-train data --fp16\n",
    })
    assert not wls["mt_cli/train.py"].launchers and not wls["mt_cli/evaluate.py"].launchers


def test_fixture_console_script_end_to_end():
    proc = run_cli("workloads", FIXTURES / "wl-console-script", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    wls = {w["entrypoint"]: w for w in json.loads(proc.stdout)["workloads"]}
    wl = wls["trainer_cli/train.py"]
    assert [(l["path"], l["line"], l["value"]["program"]) for l in wl["launchers"]] == [
        ("slurm/train.sbatch", 13, "trainer-train")]
    assert wl["launchers"][0]["value"]["wrapper"]["tool"] == "srun"
    assert wl["compute"]["id"] == "slurm/train.sbatch#slurm" and wl["compute"]["nodes"] == 2
    assert any("console script trainer-train declared in setup.py:10" in r for r in wl["links"]), wl["links"]
    assert "trainer_cli/evaluate.py" not in wls  # declared, but no file of the repository
