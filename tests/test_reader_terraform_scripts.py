"""Boot scripts inside Terraform compute (user_data, startup scripts, custom_data)
read as launchers at their lines in the .tf file; block failures reported."""
from __future__ import annotations

import textwrap

import pytest

from gpulint.run.engine import analyze_file
from gpulint.read.terraform import reader as terraform
from gpulint.read.errors import PartialRead
from gpulint.read.terraform.reader import read


def tf(text):
    return textwrap.dedent(text).lstrip("\n")


def line_of(text, needle):
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def launches(facts):
    return [f for f in facts if f.kind == "launch"]


HEREDOC = tf('''
    variable "nodes" {
      default = 2
    }
    resource "aws_instance" "trainer" {
      ami           = "ami-0123456789abcdef0"
      instance_type = "p4d.24xlarge"
      user_data     = <<-EOF
        #!/bin/bash
        cd /opt/app
        export FI_PROVIDER=efa
        NPROC=8
        torchrun --nnodes ${var.nodes} --nproc_per_node $NPROC train.py --out $${HOME}/ckpt
      EOF
    }
    ''')


def test_user_data_heredoc_launch_at_its_line_with_the_resource_target():
    facts = read(HEREDOC, "infra/main.tf")
    [launch] = launches(facts)
    assert launch.target == "aws_instance.trainer"
    assert launch.value["tool"] == "torchrun" and launch.value["script"] == "train.py"
    assert launch.value["nnodes"] == 2  # var.nodes has a literal default in this file
    assert launch.value["nproc_per_node"] == 8
    assert launch.value["args"] == ["--out", "$HOME/ckpt"]  # $${HOME} is the shell's ${HOME}, unknown
    assert (launch.loc.line, launch.loc.column) == (line_of(HEREDOC, "torchrun"), 5)
    assert launch.attrs["attribute"] == "user_data"
    env = {f.value["name"]: f for f in facts if f.kind == "env"}
    assert env["FI_PROVIDER"].value["value"] == "efa" and env["FI_PROVIDER"].target == "aws_instance.trainer"
    assert env["FI_PROVIDER"].loc.line == line_of(HEREDOC, "FI_PROVIDER")


def test_unknown_interpolation_is_an_unknown_word():
    text = tf('''
        resource "aws_instance" "t" {
          instance_type = "g5.12xlarge"
          user_data = <<EOF
        torchrun --nproc_per_node ${var.gpus} ${local.entry}
        EOF
        }
        ''')
    [launch] = launches(read(text, "main.tf"))
    assert launch.value["nproc_per_node"] is None and launch.value["script"] is None


def test_base64encode_heredoc_in_a_launch_template():
    text = tf('''
        resource "aws_launch_template" "gpu" {
          instance_type = "g5.48xlarge"
          user_data = base64encode(<<-EOT
            #!/bin/bash
            python3 -m torch.distributed.run --nproc_per_node 8 /workspace/train.py
          EOT
          )
        }
        ''')
    [launch] = launches(read(text, "main.tf"))
    assert launch.target == "aws_launch_template.gpu" and launch.value["script"] == "/workspace/train.py"
    assert launch.loc.line == line_of(text, "torch.distributed.run")


def test_script_kept_in_a_local_points_at_the_local():
    text = tf('''
        locals {
          boot = <<-EOT
            accelerate launch --num_processes 8 --mixed_precision bf16 finetune.py
          EOT
        }
        resource "aws_instance" "ft" {
          instance_type = "p5.48xlarge"
          user_data     = local.boot
        }
        ''')
    facts = read(text, "main.tf")
    [launch] = launches(facts)
    assert launch.target == "aws_instance.ft" and launch.value["tool"] == "accelerate"
    assert launch.loc.line == line_of(text, "accelerate launch")


@pytest.mark.parametrize("expr,script,via,relative_to", [
    ('file("${path.module}/scripts/train.sh")', "scripts/train.sh", "file", "module"),
    ('base64encode(file("${path.module}/scripts/train.sh"))', "scripts/train.sh", "file", "module"),
    ('filebase64("boot/run.sh")', "boot/run.sh", "filebase64", "cwd"),
    ('templatefile("${path.module}/train.sh.tpl", { entry = "train.py", nodes = 2 })', "train.sh.tpl",
     "templatefile", "module"),
    ('base64encode(templatefile("./tpl/../train.sh.tpl", {}))', "train.sh.tpl", "templatefile", "cwd"),
])
def test_file_functions_name_the_shell_file(expr, script, via, relative_to):
    text = f'resource "aws_instance" "t" {{\n  instance_type = "p4d.24xlarge"\n  user_data = {expr}\n}}\n'
    [launch] = launches(read(text, "infra/main.tf"))
    assert launch.value["tool"] == "shell" and launch.value["script"] == script
    assert launch.target == "aws_instance.t" and launch.loc.line == 3
    assert launch.attrs["via"] == via and launch.attrs["relative_to"] == relative_to
    if via == "templatefile" and "entry" in expr:
        assert launch.attrs["template_vars"] == {"entry": "train.py", "nodes": 2}


def test_file_path_that_is_not_literal_is_an_unknown_script():
    text = 'resource "aws_instance" "t" {\n  instance_type = "p4d.24xlarge"\n  user_data = file(var.script)\n}\n'
    [launch] = launches(read(text, "main.tf"))
    assert launch.value["tool"] == "shell" and launch.value["script"] is None


def test_gcp_metadata_startup_script_and_metadata_map():
    text = tf('''
        data "template_file" "boot" {
          template = file("${path.module}/boot.sh")
        }
        resource "google_compute_instance" "a" {
          machine_type = "a2-highgpu-8g"
          metadata_startup_script = "#!/bin/bash\\ntorchrun --nproc_per_node 8 /srv/train.py\\n"
        }
        resource "google_compute_instance" "b" {
          machine_type = "a3-highgpu-8g"
          metadata = {
            startup-script = data.template_file.boot.rendered
          }
        }
        resource "google_compute_instance_template" "c" {
          machine_type = "g2-standard-8"
          metadata = {
            "startup-script" = <<-EOS
              python3 /srv/serve_or_train.py
            EOS
          }
        }
        ''')
    got = {f.target: (f.value["tool"], f.value["script"], f.loc.line) for f in launches(read(text, "gcp/main.tf"))}
    assert got == {
        "google_compute_instance.a": ("torchrun", "/srv/train.py", line_of(text, "metadata_startup_script")),
        "google_compute_instance.b": ("shell", "boot.sh", line_of(text, "template = file")),
        "google_compute_instance_template.c": ("python", "/srv/serve_or_train.py", line_of(text, "serve_or_train")),
    }


def test_azure_custom_data_and_cloud_init_runcmd():
    text = tf('''
        resource "azurerm_linux_virtual_machine" "a" {
          size        = "Standard_ND96asr_v4"
          custom_data = filebase64("${path.module}/cloud-init/train.sh")
        }
        resource "azurerm_linux_virtual_machine" "b" {
          size        = "Standard_NC24ads_A100_v4"
          custom_data = base64encode(<<-EOF
            #cloud-config
            runcmd:
              - cd /opt/app && torchrun --nproc_per_node 1 train.py
              - [python3, /opt/app/eval.py]
          EOF
          )
        }
        ''')
    got = [(f.target, f.value["tool"], f.value["script"], f.loc.line) for f in launches(read(text, "az.tf"))]
    assert got == [
        ("azurerm_linux_virtual_machine.a", "shell", "cloud-init/train.sh", line_of(text, "filebase64")),
        ("azurerm_linux_virtual_machine.b", "torchrun", "train.py", line_of(text, "torchrun")),
        ("azurerm_linux_virtual_machine.b", "python", "/opt/app/eval.py", line_of(text, "eval.py")),
    ]


def test_cloudinit_config_shell_part():
    text = tf('''
        data "cloudinit_config" "boot" {
          part {
            content_type = "text/x-shellscript"
            content      = file("${path.module}/scripts/train.sh")
          }
        }
        resource "aws_instance" "t" {
          instance_type = "p4d.24xlarge"
          user_data     = data.cloudinit_config.boot.rendered
        }
        ''')
    [launch] = launches(read(text, "main.tf"))
    assert (launch.target, launch.value["script"]) == ("aws_instance.t", "scripts/train.sh")


def test_boot_script_without_launches_says_nothing():
    text = tf('''
        resource "aws_instance" "t" {
          instance_type = "p4d.24xlarge"
          user_data = <<-EOF
            #!/bin/bash
            yum install -y amazon-efa
            echo "torchrun train.py" > /etc/motd
          EOF
        }
        ''')
    assert launches(read(text, "main.tf")) == []


# ---------------------------------------------------------------- block failures

TWO_BLOCKS = tf('''
    resource "aws_instance" "bad" {
      instance_type = "p4d.24xlarge"
    }
    resource "google_compute_instance" "good" {
      machine_type = "a2-highgpu-1g"
    }
    ''')


@pytest.fixture
def broken_aws_handler(monkeypatch):
    def boom(*_args, **_kw):
        raise KeyError("unexpected shape")

    monkeypatch.setitem(terraform._RESOURCES, "aws_instance", boom)


def test_failed_block_is_reported_and_the_others_kept(broken_aws_handler):
    with pytest.raises(PartialRead) as info:
        read(TWO_BLOCKS, "main.tf")
    err = info.value
    assert [(b.what, b.line) for b in err.failures] == [('resource "aws_instance" "bad"', 1)]
    assert "KeyError" in err.failures[0].error
    assert {f.target for f in err.facts} == {"google_compute_instance.good"}


def test_engine_reports_a_failed_block_as_sys002(broken_aws_handler, host):
    from gpulint.core.config import Config

    res = analyze_file("infra/main.tf", TWO_BLOCKS, "terraform", host.registry, Config(), [])
    [finding] = [f for f in res.findings if f.code == "SYS002"]
    assert 'resource "aws_instance" "bad"' in finding.message and finding.loc.line == 1
    assert any(f.target == "google_compute_instance.good" for f in res.facts)
