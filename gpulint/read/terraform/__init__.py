"""Terraform: HCL evaluated within one file, compute targets of each cloud, launch scripts inside compute."""
