variable "gpu_capacity_type" {
  type    = string
  default = "SPOT"
}

variable "capacity" {
  type = string
}

resource "aws_eks_node_group" "gpu_spot" {
  cluster_name    = var.cluster_name
  node_group_name = "gpu-spot"
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids

  capacity_type = "SPOT"

  instance_types = [
    "g5.xlarge",
    "g5.2xlarge",
    "g4dn.xlarge",
  ]

  ami_type = "AL2_x86_64_GPU"

  scaling_config {
    desired_size = 1
    max_size     = 4
    min_size     = 1
  }

  labels = {
    workload = "training"
  }
}

resource "aws_eks_node_group" "gpu_od" {
  cluster_name    = var.cluster_name
  node_group_name = "gpu-inference"
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids
  instance_types  = ["g5.12xlarge"]

  launch_template {
    id      = aws_launch_template.gpu.id
    version = aws_launch_template.gpu.latest_version
  }

  scaling_config {
    desired_size = 0
    max_size     = 2
    min_size     = 0
  }
}

resource "aws_eks_node_group" "by_var" {
  cluster_name    = var.cluster_name
  node_group_name = "p4d"
  node_role_arn   = var.node_role_arn
  subnet_ids      = var.subnet_ids
  instance_types  = ["p4d.24xlarge"]
  capacity_type   = var.gpu_capacity_type

  scaling_config {
    desired_size = var.desired
    max_size     = 2
    min_size     = 0
  }
}

resource "aws_eks_node_group" "unresolved" {
  cluster_name   = var.cluster_name
  node_role_arn  = var.node_role_arn
  subnet_ids     = var.subnet_ids
  instance_types = ["p5.48xlarge"]
  capacity_type  = var.capacity

  scaling_config {
    desired_size = 1
    max_size     = 2
    min_size     = 1
  }
}

module "eks" {
  source  = "terraform-aws-modules/eks/aws"
  version = "~> 20.0"

  cluster_name = "ml"

  eks_managed_node_group_defaults = {
    ami_type = "AL2_x86_64_GPU"
    min_size = 0
  }

  eks_managed_node_groups = {
    default = {
      instance_types = ["m5.large"]
      min_size       = 1
      max_size       = 5
      desired_size   = 2
    }

    trn1 = {
      instance_types = ["trn1.32xlarge"]
      capacity_type  = "SPOT"
      max_size       = 4
      desired_size   = 1

      network_interfaces = [
        {
          description        = "EFA"
          device_index       = 0
          network_card_index = 0
          interface_type     = "efa"
        },
        {
          description        = "EFA"
          device_index       = 1
          network_card_index = 1
          interface_type     = "efa"
        }
      ]
    }

    p5 = {
      instance_types     = ["p5.48xlarge"]
      enable_efa_support = true
      min_size           = 2
      desired_size       = 2
    }
  }
}

resource "aws_batch_compute_environment" "gpu" {
  compute_environment_name = "gpu-training-spot"
  type                     = "MANAGED"
  service_role             = aws_iam_role.batch.arn

  compute_resources {
    type                = "SPOT"
    allocation_strategy = "SPOT_CAPACITY_OPTIMIZED"
    instance_type       = ["p3.2xlarge", "g5"]
    min_vcpus           = 0
    max_vcpus           = 256
    instance_role       = aws_iam_instance_profile.ecs.arn
    subnets             = var.subnet_ids
    security_group_ids  = [aws_security_group.batch.id]
  }
}

resource "aws_batch_compute_environment" "fargate" {
  compute_environment_name = "cpu"
  type                     = "MANAGED"

  compute_resources {
    type      = "FARGATE"
    max_vcpus = 16
    subnets   = var.subnet_ids
  }
}

resource "aws_batch_compute_environment" "warm" {
  compute_environment_name = "gpu-warm"
  type                     = "MANAGED"

  compute_resources {
    type          = "EC2"
    instance_type = ["p4d.24xlarge"]
    min_vcpus     = 96
    max_vcpus     = 192
  }
}

resource "aws_batch_job_definition" "train" {
  name = "train"
  type = "container"

  container_properties = jsonencode({
    image   = "123.dkr.ecr.us-east-1.amazonaws.com/train:latest"
    command = ["python", "train.py"]
    environment = [
      { name = "NCCL_DEBUG", value = "INFO" },
      { name = "FI_PROVIDER", value = "efa" },
    ]
    resourceRequirements = [
      { type = "GPU", value = "8" },
    ]
  })
}

resource "aws_batch_job_definition" "legacy" {
  name = "legacy"
  type = "container"

  container_properties = <<CONTAINER_PROPERTIES
{
  "image": "busybox",
  "environment": [
    {"name": "NCCL_P2P_DISABLE", "value": "1"}
  ]
}
CONTAINER_PROPERTIES
}

resource "aws_sagemaker_notebook_instance" "dev" {
  name          = "research-notebook"
  role_arn      = aws_iam_role.sm.arn
  instance_type = "ml.g5.xlarge"
}

resource "aws_sagemaker_notebook_instance" "stopped" {
  name                  = "nb-autostop"
  role_arn              = aws_iam_role.sm.arn
  instance_type         = "ml.p3.2xlarge"
  lifecycle_config_name = aws_sagemaker_notebook_instance_lifecycle_configuration.autostop.name
}

resource "aws_sagemaker_endpoint_configuration" "llm" {
  name = "llm-endpoint-config"

  production_variants {
    variant_name           = "primary"
    model_name             = aws_sagemaker_model.llm.name
    initial_instance_count = 2
    instance_type          = "ml.p4d.24xlarge"
  }
}

resource "aws_budgets_budget" "gpu" {
  name         = "monthly-gpu"
  budget_type  = "COST"
  limit_amount = "10000"
  limit_unit   = "USD"
  time_unit    = "MONTHLY"
}

resource "aws_cloudwatch_metric_alarm" "billing" {
  alarm_name          = "billing"
  comparison_operator = "GreaterThanThreshold"
  evaluation_periods  = 1
  metric_name         = "EstimatedCharges"
  namespace           = "AWS/Billing"
  period              = 21600
  statistic           = "Maximum"
  threshold           = 5000
}

resource "aws_cloudwatch_metric_alarm" "cpu" {
  alarm_name  = "cpu"
  metric_name = "CPUUtilization"
  namespace   = "AWS/EC2"
}
