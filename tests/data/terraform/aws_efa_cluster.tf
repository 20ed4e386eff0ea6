# p4d training cluster: EFA launch template + spot ASG (awsome-distributed-training style)
variable "instance_type" {
  description = "GPU instance type"
  type        = string
  default     = "p4d.24xlarge"
}

variable "node_count" {
  type = number
}

locals {
  cluster_name = "llm-train"
  efa_count    = 4
}

resource "aws_placement_group" "efa" {
  name     = "${local.cluster_name}-pg"
  strategy = "cluster"
}

resource "aws_launch_template" "gpu" {
  name_prefix   = "llm-train-p4d-"
  image_id      = data.aws_ami.dlami.id
  instance_type = var.instance_type

  placement {
    group_name = aws_placement_group.efa.name
  }

  instance_market_options {
    market_type = "spot"
    spot_options {
      spot_instance_type = "one-time"
    }
  }

  network_interfaces {
    device_index       = 0
    network_card_index = 0
    interface_type     = "efa"
    delete_on_termination = true
  }
  network_interfaces {
    device_index       = 1
    network_card_index = 1
    interface_type     = "efa"
  }
  network_interfaces {
    device_index       = 1
    network_card_index = 2
    interface_type     = "efa"
  }
  network_interfaces {
    device_index       = 1
    network_card_index = 3
    interface_type     = "efa"
  }
}

resource "aws_autoscaling_group" "workers" {
  name                = "gpu-workers"
  min_size            = 2
  max_size            = 8
  desired_capacity    = 4
  vpc_zone_identifier = var.subnet_ids
  placement_group     = aws_placement_group.efa.id

  mixed_instances_policy {
    instances_distribution {
      on_demand_base_capacity                  = 0
      on_demand_percentage_above_base_capacity = 0
      spot_allocation_strategy                 = "capacity-optimized"
    }
    launch_template {
      launch_template_specification {
        launch_template_id = aws_launch_template.gpu.id
        version            = "$Latest"
      }
      override {
        instance_type = "p4d.24xlarge"
      }
      override {
        instance_type = "p4de.24xlarge"
      }
    }
  }

  tag {
    key                 = "Name"
    value               = "gpu-worker"
    propagate_at_launch = true
  }
}

resource "aws_instance" "trainer" {
  ami           = data.aws_ami.dlami.id
  instance_type = "g5.12xlarge"
  count         = var.node_count

  tags = {
    Name = "llm-trainer"
  }
}

resource "aws_instance" "bastion" {
  ami           = data.aws_ami.al2.id
  instance_type = "t3.micro"
}

resource "aws_spot_instance_request" "cheap_worker" {
  ami           = data.aws_ami.dlami.id
  spot_price    = "3.00"
  instance_type = "g4dn.12xlarge"
  wait_for_fulfillment = true
}

resource "aws_launch_template" "dyn" {
  name          = "dyn-efa"
  instance_type = "p5.48xlarge"

  dynamic "network_interfaces" {
    for_each = range(0, lookup(var.efa_enabled, "p5.48xlarge", 0), 1)
    iterator = nic
    content {
      device_index       = nic.value != 0 ? 1 : nic.value
      network_card_index = nic.value
      interface_type     = "efa"
    }
  }
}

resource "aws_launch_template" "plain" {
  name          = "inference-g5"
  instance_type = "g5.2xlarge"
}
