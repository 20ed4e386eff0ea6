"""Tests of the Terraform reader on realistic HCL (AWS, GCP, Azure, EKS module) and on broken input."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gpulint.core.model import Fact
from gpulint.read.errors import ReadError
from gpulint.read.terraform.reader import read

DATA = Path(__file__).parent / "data" / "terraform"


def load(name: str) -> list[Fact]:
    return read((DATA / name).read_text(), f"infra/{name}")


@pytest.fixture(scope="module")
def aws():
    return load("aws_efa_cluster.tf")


@pytest.fixture(scope="module")
def eks():
    return load("aws_eks_batch.tf")


@pytest.fixture(scope="module")
def gcp():
    return load("gcp.tf")


@pytest.fixture(scope="module")
def azure():
    return load("azure.tf")


def of(facts, target, kind):
    return [f for f in facts if f.target == target and f.kind == kind]


def one(facts, target, kind) -> Fact:
    found = of(facts, target, kind)
    assert len(found) == 1, (target, kind, found)
    return found[0]


def targets(facts):
    return {f.target for f in facts if f.kind == "compute.target"}


def snippet(text: str) -> list[Fact]:
    return read(text, "main.tf")


# --------------------------------------------------------------------------- AWS


def test_launch_template_instance_type_resolved_from_variable_in_same_file(aws):
    f = one(aws, "aws_launch_template.gpu", "compute.instance_type")
    assert (f.value, f.loc.line, f.key) == ("p4d.24xlarge", 25, "instance_type")
    assert f.attrs["resolved_from"] == "var.instance_type"
    assert f.loc.path == "infra/aws_efa_cluster.tf"


def test_launch_template_spot_efa_and_placement(aws):
    cap = one(aws, "aws_launch_template.gpu", "compute.capacity")
    assert (cap.value, cap.loc.line, cap.key) == ("spot", 32, "instance_market_options.market_type")
    efa = one(aws, "aws_launch_template.gpu", "compute.efa")
    assert (efa.value, efa.loc.line) == (4, 41)
    target = one(aws, "aws_launch_template.gpu", "compute.target")
    assert target.value == {"source": "terraform", "provider": "aws", "resource": "aws_launch_template.gpu",
                            "role": "training"}
    assert target.attrs["placement_group"] == "aws_placement_group.efa"
    assert target.loc.line == 22


def test_dynamic_efa_interfaces_with_unknown_count_are_unknown(aws):
    efa = one(aws, "aws_launch_template.dyn", "compute.efa")
    assert efa.value is None and efa.attrs["dynamic"] is True and efa.loc.line == 128


def test_launch_template_without_interfaces_has_no_efa_and_no_capacity_guess(aws):
    assert one(aws, "aws_launch_template.plain", "compute.efa").value == 0
    assert of(aws, "aws_launch_template.plain", "compute.capacity") == []
    assert one(aws, "aws_launch_template.plain", "compute.target").value["role"] == "serving"


def test_asg_mixed_policy_overrides_spot_and_sizes(aws):
    t = "aws_autoscaling_group.workers"
    types = of(aws, t, "compute.instance_type")
    assert [(f.value, f.loc.line, f.key) for f in types] == [
        ("p4d.24xlarge", 81, "mixed_instances_policy.launch_template.override[0].instance_type"),
        ("p4de.24xlarge", 84, "mixed_instances_policy.launch_template.override[1].instance_type"),
    ]
    cap = one(aws, t, "compute.capacity")
    assert cap.value == "spot" and cap.loc.line == 72 and cap.attrs["mixed"] is False
    assert one(aws, t, "compute.min_nodes").value == 2
    assert (one(aws, t, "compute.node_count").value, one(aws, t, "compute.node_count").loc.line) == (4, 65)
    target = one(aws, t, "compute.target")
    assert target.attrs["launch_template"] == "aws_launch_template.gpu"
    assert target.attrs["placement_group"] == "aws_placement_group.efa"
    assert target.value["role"] is None


def test_aws_instance_count_reference_and_on_demand_default(aws):
    t = "aws_instance.trainer"
    assert one(aws, t, "compute.node_count").value == {"ref": "var.node_count"}
    cap = one(aws, t, "compute.capacity")
    assert cap.value == "on-demand" and cap.attrs["default"] is True
    assert one(aws, t, "compute.target").value["role"] == "training"
    assert one(aws, "aws_instance.bastion", "compute.target").value["role"] is None
    assert one(aws, "aws_instance.bastion", "compute.node_count").value == 1


def test_spot_instance_request_is_always_spot(aws):
    t = "aws_spot_instance_request.cheap_worker"
    assert one(aws, t, "compute.capacity").value == "spot"
    assert one(aws, t, "compute.instance_type").value == "g4dn.12xlarge"


def test_variables_locals_and_placement_group_facts(aws):
    variables = [f.value for f in aws if f.kind == "tf.variable"]
    assert variables == [{"name": "instance_type", "default": "p4d.24xlarge", "has_default": True},
                         {"name": "node_count", "default": None, "has_default": False}]
    locals_ = {f.value["name"]: f.value["value"] for f in aws if f.kind == "tf.local"}
    assert locals_ == {"cluster_name": "llm-train", "efa_count": 4}
    pg = [f for f in aws if f.kind == "infra.placement_group"]
    assert [(f.value, f.loc.line) for f in pg] == [({"resource": "aws_placement_group.efa", "strategy": "cluster"}, 17)]


def test_eks_node_group_spot_instance_types_and_scaling(eks):
    t = "aws_eks_node_group.gpu_spot"
    cap = one(eks, t, "compute.capacity")
    assert (cap.value, cap.loc.line, cap.key) == ("spot", 16, "capacity_type")
    assert [(f.value, f.key) for f in of(eks, t, "compute.instance_type")] == [
        ("g5.xlarge", "instance_types[0]"), ("g5.2xlarge", "instance_types[1]"), ("g4dn.xlarge", "instance_types[2]")]
    assert one(eks, t, "compute.min_nodes").value == 1
    assert one(eks, t, "compute.min_nodes").loc.line == 29
    assert one(eks, t, "compute.node_count").value == 1
    target = one(eks, t, "compute.target")
    assert target.value["role"] == "training" and target.attrs["ami_type"] == "AL2_x86_64_GPU"


def test_eks_node_group_defaults_on_demand_and_links_launch_template(eks):
    t = "aws_eks_node_group.gpu_od"
    cap = one(eks, t, "compute.capacity")
    assert cap.value == "on-demand" and cap.attrs["default"] is True
    assert one(eks, t, "compute.target").attrs["launch_template"] == "aws_launch_template.gpu"
    assert one(eks, t, "compute.min_nodes").value == 0


def test_eks_capacity_from_variable_resolved_or_left_as_ref(eks):
    resolved = one(eks, "aws_eks_node_group.by_var", "compute.capacity")
    assert resolved.value == "spot" and resolved.attrs["resolved_from"] == "var.gpu_capacity_type"
    assert one(eks, "aws_eks_node_group.by_var", "compute.node_count").value == {"ref": "var.desired"}
    unresolved = one(eks, "aws_eks_node_group.unresolved", "compute.capacity")
    assert unresolved.value["ref"] == "var.capacity"
    assert unresolved.value["map"]["spot"] == "spot" and unresolved.value["map"]["on_demand"] == "on-demand"


def test_eks_module_managed_node_groups(eks):
    base = "module.eks.eks_managed_node_groups."
    assert {base + "default", base + "trn1", base + "p5"} <= targets(eks)
    trn1 = base + "trn1"
    assert one(eks, trn1, "compute.capacity").value == "spot"
    assert one(eks, trn1, "compute.efa").value == 2
    # min_size comes from eks_managed_node_group_defaults
    floor = one(eks, trn1, "compute.min_nodes")
    assert floor.value == 0 and floor.key == "eks_managed_node_group_defaults.min_size" and floor.loc.line == 93
    p5 = base + "p5"
    efa = one(eks, p5, "compute.efa")
    assert efa.value is None and efa.attrs["enable_efa_support"] is True
    assert one(eks, p5, "compute.min_nodes").value == 2
    assert one(eks, base + "default", "compute.capacity").value == "on-demand"


def test_batch_compute_environments(eks):
    gpu = "aws_batch_compute_environment.gpu"
    assert one(eks, gpu, "compute.capacity").value == "spot"
    assert [f.value for f in of(eks, gpu, "compute.instance_type")] == ["p3.2xlarge", "g5"]
    assert one(eks, gpu, "compute.min_nodes").value == 0
    warm = "aws_batch_compute_environment.warm"
    assert one(eks, warm, "compute.capacity").value == "on-demand"
    floor = one(eks, warm, "compute.min_nodes")
    assert floor.value is None and floor.attrs["min_vcpus"] == 96
    assert "aws_batch_compute_environment.fargate" not in targets(eks)


def test_env_from_batch_job_definitions(eks):
    env = [(f.value["name"], f.value["value"], f.loc.line, f.attrs["resource"]) for f in eks if f.kind == "env"]
    assert env == [
        ("NCCL_DEBUG", "INFO", 183, "aws_batch_job_definition.train"),
        ("FI_PROVIDER", "efa", 184, "aws_batch_job_definition.train"),
        ("NCCL_P2P_DISABLE", "1", 200, "aws_batch_job_definition.legacy"),
    ]


def test_sagemaker_notebook_and_endpoint_roles(eks):
    nb = one(eks, "aws_sagemaker_notebook_instance.dev", "compute.target")
    assert nb.value["role"] == "notebook" and nb.attrs["lifecycle_config"] is None
    assert one(eks, "aws_sagemaker_notebook_instance.dev", "compute.instance_type").value == "ml.g5.xlarge"
    assert one(eks, "aws_sagemaker_notebook_instance.stopped", "compute.target").attrs["lifecycle_config"] is True
    ep = "aws_sagemaker_endpoint_configuration.llm"
    assert one(eks, ep, "compute.target").value["role"] == "serving"
    it = one(eks, ep, "compute.instance_type")
    assert (it.value, it.loc.line, it.key) == ("ml.p4d.24xlarge", 226, "production_variants[0].instance_type")
    assert one(eks, ep, "compute.node_count").value == 2


def test_budgets_and_billing_alarm_but_not_other_alarms(eks):
    budgets = [f.value for f in eks if f.kind == "infra.budget"]
    assert budgets == [{"resource": "aws_budgets_budget.gpu", "kind": "budget"},
                       {"resource": "aws_cloudwatch_metric_alarm.billing", "kind": "billing_alarm"}]


# --------------------------------------------------------------------------- GCP


def test_gcp_instance_spot_scheduling(gcp):
    t = "google_compute_instance.trainer"
    assert one(gcp, t, "compute.capacity").value == "spot"
    assert one(gcp, t, "compute.instance_type").value == "a2-highgpu-8g"
    assert one(gcp, t, "compute.target").value["provider"] == "gcp"


def test_gcp_instance_guest_accelerator_and_on_demand_default(gcp):
    t = "google_compute_instance.t4_box"
    acc = one(gcp, t, "compute.accelerator")
    assert (acc.value, acc.loc.line, acc.key) == ({"type": "nvidia-tesla-t4", "count": 2}, 34, "guest_accelerator[0]")
    assert one(gcp, t, "compute.gpus_per_node").value == 2
    assert one(gcp, t, "compute.capacity").value == "on-demand"
    assert one(gcp, t, "compute.target").value["role"] == "notebook"  # "dev-box"


def test_gcp_instance_template_preemptible_and_compact_policy(gcp):
    t = "google_compute_instance_template.workers"
    cap = one(gcp, t, "compute.capacity")
    assert (cap.value, cap.loc.line, cap.key) == ("spot", 53, "scheduling.preemptible")
    assert one(gcp, t, "compute.gpus_per_node").value == 4
    assert one(gcp, t, "compute.target").attrs["resource_policies"] == ["google_compute_resource_policy.compact"]
    assert of(gcp, t, "compute.node_count") == []  # the group manager decides
    pg = [f.value for f in gcp if f.kind == "infra.placement_group"]
    assert pg == [{"resource": "google_compute_resource_policy.compact", "strategy": "COLLOCATED"}]


def test_gke_a3_spot_pool_scales_to_zero(gcp):
    t = "google_container_node_pool.h100_spot_pool"
    cap = one(gcp, t, "compute.capacity")
    assert (cap.value, cap.loc.line, cap.key) == ("spot", 80, "node_config.spot")
    assert one(gcp, t, "compute.accelerator").value == {"type": "nvidia-h100-80gb", "count": 8}
    assert one(gcp, t, "compute.gpus_per_node").value == 8
    floor = one(gcp, t, "compute.min_nodes")
    assert (floor.value, floor.loc.line) == (0, 74)
    target = one(gcp, t, "compute.target")
    assert target.value["role"] == "training" and target.attrs["placement_policy"] == "COMPACT"


def test_gke_fixed_pool_preemptible_by_variable_and_accelerator_attribute_form(gcp):
    t = "google_container_node_pool.l4_serving"
    cap = one(gcp, t, "compute.capacity")
    assert cap.value == "spot" and cap.attrs["resolved_from"] == "var.use_spot"
    assert one(gcp, t, "compute.accelerator").value == {"type": "nvidia-l4", "count": 1}
    floor = one(gcp, t, "compute.min_nodes")
    assert floor.value == 2 and floor.attrs["fixed_size"] is True
    assert one(gcp, t, "compute.target").value["role"] == "serving"


def test_gke_zonal_autoscaling_and_accelerator_count_reference(gcp):
    t = "google_container_node_pool.zonal"
    floor = one(gcp, t, "compute.min_nodes")
    assert floor.value == 1 and floor.attrs["per_zone"] is True
    assert one(gcp, t, "compute.node_count").value == 1  # initial_node_count
    assert one(gcp, t, "compute.gpus_per_node").value == {"ref": "var.gpus"}
    assert one(gcp, t, "compute.capacity").value == "on-demand"


def test_gke_cluster_inline_node_pool_and_budget(gcp):
    t = "google_container_cluster.main.node_pool[0]"
    assert one(gcp, t, "compute.instance_type").value == "a2-highgpu-1g"
    assert one(gcp, t, "compute.target").value["resource"] == "google_container_cluster.main"
    assert "google_container_cluster.main.node_config" not in targets(gcp)
    assert [f.value["resource"] for f in gcp if f.kind == "infra.budget"] == ["google_billing_budget.budget"]


# --------------------------------------------------------------------------- Azure


def test_azure_vm_priority(azure):
    spot = one(azure, "azurerm_linux_virtual_machine.trainer", "compute.capacity")
    assert (spot.value, spot.loc.line, spot.key) == ("spot", 6, "priority")
    assert one(azure, "azurerm_linux_virtual_machine.trainer", "compute.instance_type").value == "Standard_ND96asr_v4"
    od = one(azure, "azurerm_linux_virtual_machine.od", "compute.capacity")
    assert od.value == "on-demand" and od.attrs["default"] is True


def test_azure_scale_sets(azure):
    vmss = "azurerm_linux_virtual_machine_scale_set.workers"
    assert one(azure, vmss, "compute.capacity").value == "spot"
    assert one(azure, vmss, "compute.node_count").value == 4
    assert one(azure, vmss, "compute.instance_type").key == "sku"
    assert of(azure, vmss, "compute.min_nodes") == []  # autoscale is a separate resource
    flex = "azurerm_orchestrated_virtual_machine_scale_set.flex"
    assert one(azure, flex, "compute.instance_type").value == "Standard_NC6s_v3"
    assert one(azure, flex, "compute.node_count").value == 2


def test_aks_pools(azure):
    gpu = "azurerm_kubernetes_cluster_node_pool.gpu"
    assert one(azure, gpu, "compute.capacity").value == "spot"
    floor = one(azure, gpu, "compute.min_nodes")
    assert (floor.value, floor.key, floor.loc.line) == (0, "min_count", 65)
    assert one(azure, gpu, "compute.target").value["role"] == "training"
    fixed = "azurerm_kubernetes_cluster_node_pool.fixed"
    floor = one(azure, fixed, "compute.min_nodes")
    assert floor.value == 3 and floor.attrs["fixed_size"] is True
    default = "azurerm_kubernetes_cluster.aks.default_node_pool"
    assert one(azure, default, "compute.instance_type").key == "default_node_pool.vm_size"
    assert one(azure, default, "compute.capacity").value == "on-demand"
    assert one(azure, default, "compute.target").value["resource"] == "azurerm_kubernetes_cluster.aks"


def test_azure_budget_and_proximity_group(azure):
    assert [f.value["resource"] for f in azure if f.kind == "infra.budget"] == [
        "azurerm_consumption_budget_subscription.ml"]
    assert [f.value["resource"] for f in azure if f.kind == "infra.placement_group"] == [
        "azurerm_proximity_placement_group.ppg"]


# --------------------------------------------------------------------------- value rules on small snippets


def test_interpolation_that_is_not_a_single_reference_is_unknown():
    facts = snippet('''
resource "aws_instance" "a" {
  instance_type = "${var.family}.${var.size}"
}
resource "aws_instance" "b" {
  instance_type = "${var.itype}"
}
resource "aws_instance" "c" {
  instance_type = var.sizes[0]
}
resource "aws_instance" "d" {
  instance_type = lookup(var.types, "gpu")
}
''')
    assert one(facts, "aws_instance.a", "compute.instance_type").value is None
    assert one(facts, "aws_instance.b", "compute.instance_type").value == {"ref": "var.itype"}
    assert one(facts, "aws_instance.c", "compute.instance_type").value is None
    assert one(facts, "aws_instance.d", "compute.instance_type").value is None


def test_local_chain_resolves_and_escaped_interpolation_is_literal():
    facts = snippet('''
variable "gpu" {
  default = "p5.48xlarge"
}
locals {
  itype = var.gpu
  label = "$${not_a_ref}"
}
resource "aws_instance" "t" {
  instance_type = local.itype
  tags = { Note = local.label }
}
''')
    it = one(facts, "aws_instance.t", "compute.instance_type")
    assert it.value == "p5.48xlarge" and it.attrs["resolved_from"] == "local.itype"
    locals_ = {f.value["name"]: f.value["value"] for f in facts if f.kind == "tf.local"}
    assert locals_ == {"itype": {"ref": "var.gpu"}, "label": "${not_a_ref}"}


def test_instance_with_launch_template_leaves_capacity_to_the_template():
    facts = snippet('''
resource "aws_instance" "w" {
  launch_template {
    id = aws_launch_template.gpu.id
  }
}
''')
    assert of(facts, "aws_instance.w", "compute.capacity") == []
    assert one(facts, "aws_instance.w", "compute.target").attrs["launch_template"] == "aws_launch_template.gpu"


@pytest.mark.parametrize("distribution, expected, mixed", [
    ("on_demand_percentage_above_base_capacity = 100", "on-demand", False),
    ('spot_allocation_strategy = "lowest-price"', "on-demand", False),  # AWS default is 100 % on-demand
    ("on_demand_percentage_above_base_capacity = 25", "spot", True),
    ("on_demand_base_capacity = 1\n      on_demand_percentage_above_base_capacity = 0", "spot", True),
])
def test_asg_instances_distribution(distribution, expected, mixed):
    facts = snippet(f'''
resource "aws_autoscaling_group" "g" {{
  min_size = 0
  max_size = 4
  mixed_instances_policy {{
    instances_distribution {{
      {distribution}
    }}
    launch_template {{
      launch_template_specification {{
        launch_template_name = "gpu"
      }}
    }}
  }}
}}
''')
    cap = one(facts, "aws_autoscaling_group.g", "compute.capacity")
    assert cap.value == expected and cap.attrs["mixed"] is mixed
    assert one(facts, "aws_autoscaling_group.g", "compute.target").attrs["launch_template"] == "gpu"


def test_role_is_not_guessed_from_environment_or_conflicting_names():
    facts = snippet('''
resource "aws_instance" "gpu" {
  instance_type = "g5.xlarge"
  tags = {
    Environment = "dev"
    Name        = "dev-cluster"
  }
}
resource "aws_instance" "train_and_serve" {
  instance_type = "g5.xlarge"
  tags = { Name = "inference" }
}
''')
    assert one(facts, "aws_instance.gpu", "compute.target").value["role"] is None
    assert one(facts, "aws_instance.train_and_serve", "compute.target").value["role"] is None


def test_for_each_makes_node_count_unknown_and_non_compute_resources_are_ignored():
    facts = snippet('''
resource "aws_instance" "many" {
  for_each      = toset(["a", "b"])
  instance_type = "p4d.24xlarge"
}
resource "aws_s3_bucket" "ckpt" {
  bucket = "checkpoints"
}
data "aws_ami" "dlami" {
  most_recent = true
}
''')
    assert one(facts, "aws_instance.many", "compute.node_count").value is None
    assert targets(facts) == {"aws_instance.many"}


def test_empty_and_comment_only_files():
    assert read("", "empty.tf") == []
    assert read("# nothing here\n/* block */\n", "c.tf") == []


def test_all_facts_are_json_and_point_into_the_file(aws, eks, gcp, azure):
    for name, facts in (("aws_efa_cluster.tf", aws), ("aws_eks_batch.tf", eks), ("gcp.tf", gcp),
                        ("azure.tf", azure)):
        n_lines = len((DATA / name).read_text().splitlines())
        for f in facts:
            json.dumps(f.to_json())
            assert 1 <= f.loc.line <= n_lines and f.loc.column >= 1, f


# --------------------------------------------------------------------------- broken input


@pytest.mark.parametrize("text, line", [
    ('resource "aws_instance" "x" {\n  instance_type = \n}\n', 2),  # lark points just after "="
    ('resource "aws_instance" "x" {\n  instance_type = "p4d.24xlarge"\n', 3),
    ('variable "a" {\n  default = [1, 2\n}\n', 3),
    ('locals {\n  a = 1\n  b = @@\n}\n', 3),
])
def test_garbled_hcl_raises_read_error_with_position(text, line):
    with pytest.raises(ReadError) as info:
        read(text, "bad.tf")
    err = info.value
    assert isinstance(err, ValueError)
    assert err.line == line and err.column >= 1 and err.message.startswith("cannot parse HCL")


def test_duplicate_and_odd_but_parsable_constructs_do_not_raise():
    facts = snippet('''
resource "aws_instance" "x" {
  instance_type = "g5.xlarge"
  instance_type = "g5.2xlarge"
}
resource "aws_instance" {
}
resource "google_container_node_pool" "p" {
  node_config = "not an object"
  autoscaling {}
}
''')
    assert "aws_instance.x" in targets(facts)


def _mutations(text: str, rng: random.Random):
    for cut in sorted(rng.sample(range(len(text)), 25)):
        yield text[:cut]
    for _ in range(25):
        pos = rng.randrange(len(text))
        junk = rng.choice(['"', "{", "}", "${", "=", "\n", "[", "<<EOF\n", "\x00", "é", "\\"])
        yield text[:pos] + junk + text[pos + 1:]


@pytest.mark.parametrize("name", ["aws_efa_cluster.tf", "aws_eks_batch.tf", "gcp.tf", "azure.tf"])
def test_fuzzed_input_only_ever_raises_read_error(name):
    rng = random.Random(name)  # fixed seed per file: reproducible
    for text in _mutations((DATA / name).read_text(), rng):
        try:
            facts = read(text, name)
        except ReadError as err:
            assert err.line >= 1 and err.column >= 1
        else:
            assert all(isinstance(f, Fact) for f in facts)


def test_deeply_nested_input_is_a_read_error_or_facts():
    text = "locals {\n  a = " + "[" * 3000 + "]" * 3000 + "\n}\n"
    try:
        read(text, "deep.tf")
    except ReadError:
        pass


def test_env_from_ecs_heredoc_template_with_interpolations():
    facts = snippet('''resource "aws_ecs_task_definition" "t" {
  family = "train"
  container_definitions = <<DEFS
[
  {
    "name": "trainer",
    "image": "${aws_ecr_repository.train.repository_url}:latest",
    "cpu": ${var.cpu},
    "environment": [
      {"name": "NCCL_SOCKET_IFNAME", "value": "^lo,docker"},
      {"name": "RUN_ID", "value": "${var.run_id}"}
    ]
  }
]
DEFS
}
''')
    env = [(f.value, f.loc.line) for f in facts if f.kind == "env"]
    assert env == [({"name": "NCCL_SOCKET_IFNAME", "value": "^lo,docker"}, 10),
                   ({"name": "RUN_ID", "value": None}, 11)]
    assert targets(facts) == set()  # a task definition is not compute
