variable "use_spot" {
  type    = bool
  default = true
}

resource "google_compute_instance" "trainer" {
  name         = "a100-trainer"
  machine_type = "a2-highgpu-8g"
  zone         = "us-central1-a"

  boot_disk {
    initialize_params {
      image = "deeplearning-platform-release/pytorch-latest-gpu"
    }
  }

  scheduling {
    provisioning_model          = "SPOT"
    preemptible                 = true
    automatic_restart           = false
    instance_termination_action = "STOP"
  }

  network_interface {
    network = "default"
  }
}

resource "google_compute_instance" "t4_box" {
  name         = "t4-dev-box"
  machine_type = "n1-standard-8"

  guest_accelerator {
    type  = "nvidia-tesla-t4"
    count = 2
  }

  scheduling {
    on_host_maintenance = "TERMINATE"
  }
}

resource "google_compute_instance_template" "workers" {
  name_prefix  = "gpu-worker-"
  machine_type = "n1-standard-16"

  guest_accelerator {
    type  = "nvidia-tesla-v100"
    count = 4
  }

  scheduling {
    preemptible       = true
    automatic_restart = false
  }

  resource_policies = [google_compute_resource_policy.compact.id]
}

resource "google_compute_resource_policy" "compact" {
  name = "compact"
  group_placement_policy {
    vm_count    = 2
    collocation = "COLLOCATED"
  }
}

resource "google_container_node_pool" "h100_spot_pool" {
  name     = "h100-spot-pool"
  cluster  = google_container_cluster.main.name
  location = var.zone

  autoscaling {
    total_min_node_count = 0
    total_max_node_count = 4
  }

  node_config {
    machine_type = "a3-highgpu-8g"
    spot         = true

    guest_accelerator {
      type  = "nvidia-h100-80gb"
      count = 8
      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
    }

    labels = {
      role = "training"
    }
  }

  placement_policy {
    type = "COMPACT"
  }
}

resource "google_container_node_pool" "l4_serving" {
  name       = "l4-serving"
  cluster    = google_container_cluster.main.name
  node_count = 2

  node_config {
    machine_type = "g2-standard-8"
    preemptible  = var.use_spot
    guest_accelerator = [{
      type  = "nvidia-l4"
      count = 1
    }]
  }
}

resource "google_container_node_pool" "zonal" {
  name               = "t4"
  cluster            = google_container_cluster.main.name
  initial_node_count = 1

  autoscaling {
    min_node_count = 1
    max_node_count = 3
  }

  node_config {
    machine_type = "n1-standard-4"
    guest_accelerator {
      type  = "nvidia-tesla-t4"
      count = var.gpus
    }
  }
}

resource "google_container_cluster" "main" {
  name                     = "ml"
  location                 = "us-central1"
  remove_default_node_pool = true
  initial_node_count       = 1

  node_pool {
    name       = "inline-a100"
    node_count = 1
    node_config {
      machine_type = "a2-highgpu-1g"
    }
  }
}

resource "google_billing_budget" "budget" {
  billing_account = var.billing_account
  display_name    = "ML budget"
  amount {
    specified_amount {
      currency_code = "USD"
      units         = "5000"
    }
  }
}
