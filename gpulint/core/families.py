"""What an instance type name says about its hardware, by the providers' naming rules.

Cloud instance names encode their family: AWS ``p4d.24xlarge`` (family ``p``),
SageMaker ``ml.`` + the EC2 name, GCP ``a2-highgpu-1g`` (series ``a2``), Azure
``Standard_NC24ads_A100_v4`` (family ``NC``). Accelerated families are few and
stable; everything else a provider sells is CPU compute. Deciding by family
(not by a list of sizes) keeps new sizes of old families right.

Sources: AWS "Amazon EC2 instance type naming conventions"
(docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html); GCP
"Machine families resource and comparison guide"
(cloud.google.com/compute/docs/machine-resource); Azure "Virtual machine sizes
naming conventions" (learn.microsoft.com/azure/virtual-machines/vm-naming-conventions).
"""
from __future__ import annotations

import re

GPU, CPU, UNKNOWN = "gpu", "cpu", "unknown"

# AWS: <family letters><generation><attributes>.<size>; accelerated: p, g, gr (GPUs), trn, inf (Neuron), dl (Gaudi)
_AWS = re.compile(r"^(?:ml\.)?([a-z]+)(\d+)([a-z0-9-]*)\.([a-z0-9-]+)$")
_AWS_ACCEL = {"p", "g", "gr", "trn", "inf", "dl"}
# GCP: <series>-<type>-<size>; accelerated series: A2/A3/A4 and G2/G4 (GPUs attached by type), ct* (TPU VMs)
_GCP = re.compile(r"^([a-z]{1,2}\d+[a-z]*)-([a-z]+)(?:-(\d+[a-z]*|[a-z]+))?(?:-[a-z0-9]+)*$")
_GCP_ACCEL = {"a2", "a3", "a4", "a4x", "g2", "g4"}
_GCP_CPU = {"n1", "n2", "n2d", "n4", "e2", "c2", "c2d", "c3", "c3d", "c4", "c4a", "c4d", "m1", "m2", "m3", "m4",
            "t2a", "t2d", "h3", "z3", "x4", "f1", "g1"}
# Azure: [Standard_|Basic_]<family letters><vCPUs>...; the N-series (NC, ND, NV, NG) carry GPUs
_AZURE = re.compile(r"^(?:standard_|basic_)?([a-z]+)(\d+)", re.IGNORECASE)


def device_of(name: str, provider: str | None = None, accelerator_count: int | None = None) -> tuple[str, str]:
    """(GPU | CPU | UNKNOWN, why) for an instance type as written.

    ``accelerator_count`` is the count of GPUs attached separately (GCP N1 ``guest_accelerator``).
    """
    text = name.strip()
    low = text.lower()
    if low == "local":
        return CPU, "SageMaker local mode runs in a container on this machine"
    if low == "local_gpu":
        return GPU, "SageMaker local mode on this machine's GPUs"
    if provider in (None, "aws"):
        if re.match(r"^(?:ml\.)?u-\d+tb\d*\.", low):
            return CPU, "AWS high-memory family 'u' has no GPU"
        m = _AWS.match(low)
        if m:
            family = m.group(1)
            if family in _AWS_ACCEL:
                return GPU, f"AWS family {family!r} is accelerated"
            return CPU, f"AWS family {family!r} has no GPU"
    if provider in (None, "gcp"):
        m = _GCP.match(low)
        if m:
            series = m.group(1)
            if series in _GCP_ACCEL:
                return GPU, f"GCP series {series!r} carries GPUs"
            if series.startswith("ct") or m.group(2) == "tpu":
                return UNKNOWN, f"GCP {series!r} is a TPU machine type, not a CUDA GPU"
            if series in _GCP_CPU:
                if accelerator_count:
                    return GPU, f"{accelerator_count} GPU(s) attached to a GCP {series!r} VM"
                return CPU, f"GCP series {series!r} without attached accelerators has no GPU"
    if provider in (None, "azure"):
        m = _AZURE.match(text)
        if m and ("_" in text or provider == "azure"):
            family = m.group(1).upper()
            if family.startswith("N") and family[:2] in ("NC", "ND", "NV", "NG"):
                return GPU, f"Azure {family}-series carries GPUs"
            return CPU, f"Azure {family}-series has no GPU"
    return UNKNOWN, f"{text!r} follows no provider's naming that gpulint knows"


def looks_like_gpu_instance(name: str) -> bool:
    """An instance type that, by its family, carries accelerators (catalogue entry or not)."""
    return device_of(name)[0] == GPU if isinstance(name, str) and name.strip() else False


# GPUs without Tensor Cores (Kepler K80, Maxwell M60, Pascal P100/P40/P4): mixed precision buys little there.
_PRE_TENSOR_CORE_AWS = {"p2", "g2", "g3", "g3s"}
_PRE_TENSOR_CORE_AZURE = re.compile(r"^(?:standard_)?(?:nc\d+r?(?:_promo)?$|nc\d+r?s_v2$|nd\d+r?s$|nv\d+(?:s_v3)?$)", re.IGNORECASE)
_PRE_TENSOR_CORE_ACCELERATORS = ("k80", "p100", "p40", "p4", "m60")


def pre_tensor_core(name: str | None, accelerator: dict | None = None) -> bool:
    """An instance (or attached accelerator) whose GPUs have no Tensor Cores: AWS p2/g2/g3, Azure NC
    (K80), NCv2 (P100), ND (P40), NV/NVv3 (M60), GCP N1 with K80/P100/P4."""
    acc = str((accelerator or {}).get("type") or "").lower()
    if acc and any(acc.endswith(a) or f"-{a}" in acc for a in _PRE_TENSOR_CORE_ACCELERATORS):
        return True
    if not name:
        return False
    low = name.strip().lower()
    m = _AWS.match(low)
    if m and m.group(1) + m.group(2) in _PRE_TENSOR_CORE_AWS:
        return True
    return bool(_PRE_TENSOR_CORE_AZURE.match(low))
