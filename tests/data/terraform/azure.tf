resource "azurerm_linux_virtual_machine" "trainer" {
  name                = "nd-trainer"
  resource_group_name = azurerm_resource_group.ml.name
  location            = azurerm_resource_group.ml.location
  size                = "Standard_ND96asr_v4"
  priority            = "Spot"
  eviction_policy     = "Deallocate"
  max_bid_price       = -1
  admin_username      = "azureuser"
}

resource "azurerm_linux_virtual_machine" "od" {
  name                = "nc-serving"
  resource_group_name = azurerm_resource_group.ml.name
  location            = azurerm_resource_group.ml.location
  size                = "Standard_NC24ads_A100_v4"
  admin_username      = "azureuser"
}

resource "azurerm_linux_virtual_machine_scale_set" "workers" {
  name                = "ndv5-workers"
  resource_group_name = azurerm_resource_group.ml.name
  location            = azurerm_resource_group.ml.location
  sku                 = "Standard_ND96isr_H100_v5"
  instances           = 4
  priority            = "Spot"
  eviction_policy     = "Delete"
  admin_username      = "azureuser"
}

resource "azurerm_orchestrated_virtual_machine_scale_set" "flex" {
  name                        = "flex"
  resource_group_name         = azurerm_resource_group.ml.name
  location                    = azurerm_resource_group.ml.location
  sku_name                    = "Standard_NC6s_v3"
  instances                   = 2
  platform_fault_domain_count = 1
}

resource "azurerm_kubernetes_cluster" "aks" {
  name                = "ml-aks"
  location            = azurerm_resource_group.ml.location
  resource_group_name = azurerm_resource_group.ml.name
  dns_prefix          = "mlaks"

  default_node_pool {
    name       = "system"
    vm_size    = "Standard_D4s_v5"
    node_count = 2
  }

  identity {
    type = "SystemAssigned"
  }
}

resource "azurerm_kubernetes_cluster_node_pool" "gpu" {
  name                  = "gpu"
  kubernetes_cluster_id = azurerm_kubernetes_cluster.aks.id
  vm_size               = "Standard_NC24ads_A100_v4"
  priority              = "Spot"
  eviction_policy       = "Delete"
  spot_max_price        = -1
  auto_scaling_enabled  = true
  min_count             = 0
  max_count             = 4
  node_count            = 0

  node_labels = {
    "kubernetes.azure.com/scalesetpriority" = "spot"
    "workload"                              = "training"
  }
}

resource "azurerm_kubernetes_cluster_node_pool" "fixed" {
  name                  = "inference"
  kubernetes_cluster_id = azurerm_kubernetes_cluster.aks.id
  vm_size               = "Standard_NC4as_T4_v3"
  node_count            = 3
  enable_auto_scaling   = false
}

resource "azurerm_consumption_budget_subscription" "ml" {
  name            = "ml-budget"
  subscription_id = data.azurerm_subscription.current.id
  amount          = 1000
  time_grain      = "Monthly"
}

resource "azurerm_proximity_placement_group" "ppg" {
  name                = "ml-ppg"
  location            = azurerm_resource_group.ml.location
  resource_group_name = azurerm_resource_group.ml.name
}
