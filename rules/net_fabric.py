"""NET001-NET004: the inter-node fabric (EFA, InfiniBand, GPUDirect-TCPX), the
NCCL/libfabric environment and the all-reduce estimate, checked against the
instance the workload really runs on (``wl.resolution.compute`` and the other targets of its job)."""
from __future__ import annotations

from typing import Iterable

from gpulint.rulekit import (
    CostImpact, Example, Expect, Fact, Location, ResolvedCompute, Rule, Severity, Workload, compute_of,
    compute_related, fixes, hookimpl, on_gpu, price_basis, sharding_of, unpriced,
)

RDMA_FABRICS = ("efa", "infiniband", "gpudirect-tcpx", "gpudirect-tcpxo", "gpudirect-rdma-roce")
_FABRIC_NAME = {"efa": "EFA", "infiniband": "InfiniBand", "gpudirect-tcpx": "GPUDirect-TCPX",
                "gpudirect-tcpxo": "GPUDirect-TCPXO", "gpudirect-rdma-roce": "GPUDirect RDMA (RoCE)"}


# -- shared helpers ---------------------------------------------------------------------------
def _nodes(wl: Workload) -> int | None:
    c = compute_of(wl)
    n = c.nodes if c is not None else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _env_facts(wl: Workload) -> list[Fact]:
    """Every env fact of the workload (launcher files, containers, tasks, linked configs), once each."""
    out, seen = [], set()
    for f in list(wl.env) + wl.of("env"):
        if not isinstance(f.value, dict) or not isinstance(f.value.get("name"), str):
            continue
        k = (f.loc.path, f.loc.line, f.loc.column, f.value["name"])
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out


def _env_names(wl: Workload) -> set[str]:
    return {f.value["name"] for f in _env_facts(wl)}


def _int_value(v) -> int | None:
    """NCCL reads its switches with strtol: '1' disables, '0' does not; anything else is unknown."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    return None


def _job_cost(wl: Workload, what: str) -> CostImpact:
    """No avoidable figure, but the hourly price the slowdown applies to, with its basis."""
    c = compute_of(wl)
    if c is not None and c.usd_per_hour:
        return CostImpact(None, f"{price_basis(wl)} = ${c.usd_per_hour:.2f}/h for the job; {what}", "low")
    return unpriced(f"No price attached: {(c.why_no_price if c is not None else None) or 'the instance is not known'}. {what}")


# -- NET001 -----------------------------------------------------------------------------------
_K8S_EFA_BAD = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llama-ft
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          nodeSelector:
            node.kubernetes.io/instance-type: p4d.24xlarge
          containers:
            - name: pytorch
              image: registry.example.com/train:1.0
              command: ["torchrun", "--nnodes", "4", "--nproc_per_node", "8", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      template:
        spec:
          nodeSelector:
            node.kubernetes.io/instance-type: p4d.24xlarge
          containers:
            - name: pytorch
              image: registry.example.com/train:1.0
              command: ["torchrun", "--nnodes", "4", "--nproc_per_node", "8", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: 8
"""

_DDP_TRAIN = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
model = DDP(build_model().cuda())
opt = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(batch).sum().backward()
    opt.step()
"""


class RdmaNotEnabled(Rule):
    """A multi-node job runs on an instance with an RDMA fabric (EFA, InfiniBand, GPUDirect-TCPX) that it does not attach.

    What it does:
        For a workload that runs on more than one node (node count from the compute target or the
        launcher's ``--nnodes``), looks up the instance in the catalogue; where the instance offers
        an RDMA fabric, checks that the job attaches it:

        * AWS EFA: the Kubernetes container requests ``vpc.amazonaws.com/efa`` next to
          ``nvidia.com/gpu``, and a Terraform launch template has network interfaces with
          ``interface_type = "efa"``. No request at all is an error; fewer interfaces than the
          instance has (p4d: 4, p5: 32) is a warning.
        * GCP A3 High/Mega on Kubernetes: the pod carries GPUDirect-TCPX/TCPXO settings
          (``NCCL_GPUDIRECTTCPX_*`` / ``NCCL_FASTRAK_*`` or the plugin's library path) somewhere in
          the repository. Nothing is said for plain GCE VMs, whose images may set them.
        * Azure ND (InfiniBand) is configured by the platform between VMs of one scale set; that
          placement cannot be seen reliably from a repository, so this rule stays silent there
          (``NCCL_IB_DISABLE=1`` is NET002's).

        An attachment computed at run time (a variable, a dynamic block) keeps it silent.
    Why it costs money:
        Without the fabric NCCL falls back to TCP sockets over the ordinary network interface, a
        fraction of the 400-3200 Gbps the instance is priced for, so every gradient all-reduce
        waits on the slow path while all GPUs of all nodes are billed.
    How to fix:
        Request every EFA device of the instance, and keep the aws-ofi-nccl plugin in the image::

            resources:
              limits:
                nvidia.com/gpu: 8
                vpc.amazonaws.com/efa: 4   # p4d.24xlarge; p5.48xlarge: 32

        Terraform: one ``network_interfaces { interface_type = "efa" ... }`` block per EFA device in
        the launch template, a cluster placement group and a security group that allows all
        traffic to itself. GKE A3: the TCPX/TCPXO daemon sidecar and its NCCL settings.
    Cost model:
        No avoidable figure: the share of each step spent in all-reduce over TCP depends on the model
        and batch. The basis names the job's hourly price (all nodes) that the slowdown applies to.
    Sources:
        training-facts §6.1 (aws-samples/awsome-distributed-training fsdp.yaml-template requests
        ``vpc.amazonaws.com/efa``; EFA counts per instance from the catalogue), §6.2 (Azure ND: IB
        within one VM scale set), §6.3 (cloud.google.com/compute/docs/gpus/gpu-network-bandwidth; TCPX
        plugin and env), §6.4.
    """

    code = "NET001"
    name = "rdma-not-enabled"
    severity = Severity.ERROR
    family = "NET"
    since = "0.1.0"
    reads_code = False  # the pods' or nodes' RDMA devices and the node count decide it, whatever code runs

    VALID = [
        Example({"train.py": _DDP_TRAIN, "k8s/job.yaml": _K8S_EFA_BAD.replace(
            "                  nvidia.com/gpu: 8\n",
            "                  nvidia.com/gpu: 8\n                  vpc.amazonaws.com/efa: 4\n")},
            title="every pod requests the instance's 4 EFA devices"),
        Example({"train.py": _DDP_TRAIN, "k8s/job.yaml": _K8S_EFA_BAD.replace("replicas: 3", "replicas: 0").replace(
            '"--nnodes", "4"', '"--nnodes", "1"')},
            title="a single node needs no inter-node fabric"),
    ]
    INVALID = [
        Example({"train.py": _DDP_TRAIN, "k8s/job.yaml": _K8S_EFA_BAD},
                expect=[Expect("k8s/job.yaml", 19, ("vpc.amazonaws.com/efa", "p4d.24xlarge", "4 nodes")),
                        Expect("k8s/job.yaml", 32, ("vpc.amazonaws.com/efa", "Worker"))],
                title="4-node PyTorchJob on p4d.24xlarge without the EFA resource"),
        Example({"train.py": _DDP_TRAIN, "k8s/job.yaml": _K8S_EFA_BAD.replace(
            "                  nvidia.com/gpu: 8\n",
            "                  nvidia.com/gpu: 8\n                  vpc.amazonaws.com/efa: 1\n")},
            expect=[Expect("k8s/job.yaml", 20, ("1 of the 4",)), Expect("k8s/job.yaml", 34, ("1 of the 4",))],
            title="one of four EFA devices"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not wl.trains or not on_gpu(wl):
            return
        nodes = _nodes(wl)
        if nodes is None or nodes < 2:
            return
        for hw in wl.resolution.job_computes:
            rdma = hw.rdma
            if rdma not in RDMA_FABRICS or hw.instance is None:
                continue
            if rdma == "efa":
                yield from self._efa(wl, hw, hw, nodes)
            elif rdma in ("gpudirect-tcpx", "gpudirect-tcpxo"):
                yield from self._tcpx(wl, ctx, hw, hw, nodes, rdma)

    def _efa(self, wl, compute: ResolvedCompute, hw: ResolvedCompute, nodes: int) -> Iterable:
        req = hw.efa_requested
        want = hw.efa_interfaces
        if not isinstance(req, int) or isinstance(req, bool):
            return  # not stated, or computed at run time
        loc = hw.efa_loc or compute.loc
        src = hw.source or ""
        role = compute.target.rsplit("/", 1)[-1] if src == "kubernetes" else compute.target
        what = (f"{role} requests nvidia.com/gpu but no vpc.amazonaws.com/efa" if src == "kubernetes"
                else f"{compute.path if compute.target == 'slurm' else compute.target} runs on {hw.placed_on}, which does not enable EFA" if hw.placed_on and
                hw.efa_loc is not None and hw.efa_loc.path != compute.path
                else f"{compute.target} attaches no network interface with interface_type = \"efa\"")
        inst = hw.instance_name
        related = compute_related(wl)
        if req == 0:
            yield self.finding(
                loc, f"{what}: {nodes} nodes of {inst} ({want or 'its'} EFA devices, {hw.network_gbps} Gbps) "
                     f"would all-reduce over TCP instead of EFA",
                symbol=f"{compute.target}:efa", workload=wl.name, related=related,
                cost=_job_cost(wl, "NCCL over TCP instead of EFA slows every all-reduce; the slowdown is not estimated."))
        elif isinstance(want, int) and 0 < req < want and not _fair_share(hw, req, want):
            yield self.finding(
                loc, f"{role} requests {req} of the {want} EFA devices of {inst}: {nodes}-node all-reduce gets about "
                     f"{req}/{want} of the {hw.network_gbps} Gbps fabric",
                symbol=f"{compute.target}:efa-partial", workload=wl.name, related=related, severity=Severity.WARNING,
                cost=_job_cost(wl, f"only {req} of {want} EFA devices carry inter-node traffic; the slowdown is not estimated."))

    def _tcpx(self, wl, ctx, compute: ResolvedCompute, hw: ResolvedCompute, nodes: int, rdma: str) -> Iterable:
        if hw.source != "kubernetes" or hw.assumed or not wl.code_known:
            return  # VM images (and a job's own image, its code unseen) may configure TCPX themselves; a guessed instance proves nothing
        markers = ("GPUDIRECTTCPX", "FASTRAK", "TCPX")
        for f in ctx.repo.all("env"):
            v = f.value if isinstance(f.value, dict) else {}
            if any(m in str(v.get("name", "")).upper() or m in str(v.get("value", "")).upper() for m in markers):
                return
        for f in ctx.repo.all("launch"):
            if "tcpx" in str(f.value).lower() or "nccl-env-profile" in str(f.value).lower():
                return
        it = compute.first("compute.instance_type")
        loc = it.loc if it is not None else compute.loc
        fab = _FABRIC_NAME[rdma]
        yield self.finding(
            loc, f"{nodes} nodes of {hw.instance_name} run without {fab}: no NCCL_GPUDIRECTTCPX_*/NCCL_FASTRAK_* setting "
                 f"or TCPX plugin path anywhere in the repository, so NCCL uses one host NIC over TCP",
            symbol=f"{compute.target}:{rdma}", workload=wl.name, related=compute_related(wl),
            cost=_job_cost(wl, f"NCCL without {fab} uses a fraction of the {hw.network_gbps} Gbps; the slowdown is not estimated."))


# -- NET002 -----------------------------------------------------------------------------------
_NVLINK = ("nvlink", "nvswitch")


class NcclEnvAntipattern(Rule):
    """An NCCL / libfabric environment variable throws away the workload's interconnect.

    What it does:
        Reads every environment variable set for the workload (Kubernetes container env, SkyPilot
        ``envs``, SageMaker ``environment``, ``export`` in launch and Slurm scripts, Dockerfile ENV of
        a linked image) and checks it against the resolved instance:

        * ``NCCL_P2P_DISABLE=1`` on an NVLink / NVSwitch instance;
        * ``NCCL_SHM_DISABLE=1`` on an instance with more than one GPU;
        * ``NCCL_IB_DISABLE=1`` on an InfiniBand or RoCE instance, multi-node;
        * ``FI_PROVIDER`` other than ``efa`` (``tcp``, ``sockets`` ...) or ``NCCL_NET=Socket`` on an EFA
          instance, multi-node;
        * ``NCCL_DEBUG=INFO``/``TRACE`` on a cloud compute target (info: log volume, not speed).

        A variable whose value is not a literal, or an instance gpulint does not know, keeps it silent.
    Why it costs money:
        ``NCCL_P2P_DISABLE=1`` routes intra-node traffic through host memory instead of NVLink;
        ``NCCL_IB_DISABLE=1`` and a TCP libfabric provider send inter-node traffic over IP sockets:
        the interconnect the instance is priced for sits idle while GPUs wait on all-reduce.
    How to fix:
        Delete the override (these are debugging switches)::

            env:
              - name: NCCL_P2P_DISABLE   # remove
                value: "1"
              - name: FI_PROVIDER
                value: efa               # not tcp / sockets

        If a variable works around a real fault (a broken driver, a wrong NIC), fix the fault and
        keep the variable out of production launchers.
    Cost model:
        No avoidable figure: the loss depends on how communication-bound the model is. The basis names
        the job's hourly price that the slowdown applies to.
    Sources:
        NCCL environment variables (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html):
        NCCL_P2P_DISABLE disables "CUDA direct access between GPUs, using NVLink or PCI"; training-facts
        §6.4 (anti-patterns), §6.1 (FI_PROVIDER=efa in aws-samples/awsome-distributed-training).
    """

    code = "NET002"
    name = "nccl-env-antipattern"
    severity = Severity.WARNING
    family = "NET"
    since = "0.1.0"
    reads_code = False  # a variable the job's environment sets and the machine: whatever code runs, NCCL reads them

    VALID = [
        Example({"train.py": _DDP_TRAIN, "run.sh": """\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gres=gpu:8
export FI_PROVIDER=efa
export NCCL_SOCKET_IFNAME=^lo,docker
srun torchrun --nnodes 2 --nproc_per_node 8 train.py
"""}, title="documented EFA settings"),
        Example({"train.py": _DDP_TRAIN, "run.sh": """\
#!/bin/bash
export NCCL_P2P_DISABLE=1
torchrun --nproc_per_node 2 train.py
"""}, title="no instance known: the hardware cannot be judged"),
    ]
    INVALID = [
        Example({"train.py": _DDP_TRAIN, "k8s/job.yaml": _K8S_EFA_BAD.replace(
            "          containers:\n            - name: pytorch\n              image: registry.example.com/train:1.0\n"
            '              command: ["torchrun", "--nnodes", "4", "--nproc_per_node", "8", "train.py"]\n',
            "          containers:\n            - name: pytorch\n              image: registry.example.com/train:1.0\n"
            '              command: ["torchrun", "--nnodes", "4", "--nproc_per_node", "8", "train.py"]\n'
            '              env:\n                - name: NCCL_P2P_DISABLE\n                  value: "1"\n', 1)},
            expect=[Expect("k8s/job.yaml", 18, ("NCCL_P2P_DISABLE=1", "nvswitch", "p4d.24xlarge"))],
            title="NCCL_P2P_DISABLE=1 on an NVSwitch instance"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not on_gpu(wl):
            return
        hw = compute_of(wl)
        if hw is None or hw.instance is None:
            return
        nodes = _nodes(wl)
        multi = nodes is not None and nodes > 1
        inter, rdma, inst = hw.interconnect, hw.rdma, hw.instance_name
        gpus = hw.gpus_per_node or hw.gpu_count or 0
        for f in _env_facts(wl):
            name, raw = f.value["name"], f.value.get("value")
            if raw is None:
                continue
            val = str(raw).strip()
            num = _int_value(val)
            msg, sev = None, None
            if name == "NCCL_P2P_DISABLE" and num and inter in _NVLINK:
                msg = f"NCCL_P2P_DISABLE={val} on {inst} ({inter}): GPUs of a node exchange data through host memory instead of {inter.replace('nvswitch', 'NVSwitch').replace('nvlink', 'NVLink')}"
            elif name == "NCCL_SHM_DISABLE" and num and gpus > 1:
                msg = f"NCCL_SHM_DISABLE={val} on {inst} ({gpus} GPUs per node): NCCL loses its shared-memory path between processes of a node"
            elif name == "NCCL_IB_DISABLE" and num and rdma in ("infiniband", "gpudirect-rdma-roce") and multi:
                msg = f"NCCL_IB_DISABLE={val} on {nodes} nodes of {inst} ({_FABRIC_NAME[rdma]}): inter-node traffic falls back to IP sockets"
            elif name == "FI_PROVIDER" and rdma == "efa" and multi and val.lower() not in ("efa", "") and "$" not in val:
                msg = f"FI_PROVIDER={val} on {nodes} nodes of {inst}: libfabric uses {val} instead of EFA for NCCL traffic"
            elif name == "NCCL_NET" and rdma in RDMA_FABRICS and multi and val.lower() == "socket":
                msg = f"NCCL_NET={val} on {nodes} nodes of {inst}: NCCL is forced onto TCP sockets instead of {_FABRIC_NAME[rdma]}"
            elif name == "NCCL_DEBUG" and val.upper() in ("INFO", "TRACE") and f.target:
                msg, sev = (f"NCCL_DEBUG={val} in a production launcher on {inst}: per-rank NCCL logging "
                            f"(keep it for debugging runs; WARN is the quiet setting)"), Severity.INFO
            if msg is None:
                continue
            cost = unpriced("Logging volume only; no GPU time is attributed.") if sev else _job_cost(
                wl, "the part of each step lost to the slower transport is not estimated.")
            yield self.finding(f.loc, msg, symbol=f"{f.key or name}={val}", workload=wl.name, severity=sev,
                               related=compute_related(wl), cost=cost, fix=fixes.remove_env(f))


# -- NET003 -----------------------------------------------------------------------------------
# Settings the TCPX/TCPXO plugins cannot work without (training-facts §6.3, seen in several repos).
_TCPX_REQUIRED = ("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "NCCL_GPUDIRECTTCPX_CTRL_DEV", "NCCL_SOCKET_IFNAME")
_TCPXO_REQUIRED = ("NCCL_FASTRAK_IFNAME", "NCCL_FASTRAK_CTRL_DEV", "NCCL_SOCKET_IFNAME")


class FabricEnvUnset(Rule):
    """The RDMA plugin is in use but settings its provider documents as required are missing.

    What it does:
        On GCP A3 High (GPUDirect-TCPX) and A3 Mega (GPUDirect-TCPXO), once the workload's environment
        shows the plugin in use (any ``NCCL_GPUDIRECTTCPX_*`` / ``NCCL_FASTRAK_*`` variable), checks
        that the interface settings the plugin needs are set too: ``NCCL_GPUDIRECTTCPX_SOCKET_IFNAME``,
        ``NCCL_GPUDIRECTTCPX_CTRL_DEV`` and ``NCCL_SOCKET_IFNAME`` (TCPX); ``NCCL_FASTRAK_IFNAME``,
        ``NCCL_FASTRAK_CTRL_DEV`` and ``NCCL_SOCKET_IFNAME`` (TCPXO, unless ``NCCL_LIB_DIR`` shows the
        plugin's ``nccl-env-profile.sh`` is sourced, which sets them).

        Deliberately *not* flagged: unset ``FI_*`` variables on AWS EFA. Current aws-ofi-nccl sets the
        libfabric defaults itself, and AWS's own samples say "for P5 FI_* should be commented out" and
        "for G4dn and other G5, comment out all": the documentation disagrees per instance and version,
        so absence is not a finding (a wrong ``FI_PROVIDER`` is NET002's). Azure's NCCL topology
        settings are not verified well enough to require.
    Why it costs money:
        With a partial configuration the plugin cannot find its NICs and NCCL falls back to the host
        NIC over TCP, a fraction of the 1000-1800 Gbps the A3 instance is priced for.
    How to fix:
        Set the full group (GKE interface names shown)::

            NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2,eth3,eth4
            NCCL_GPUDIRECTTCPX_CTRL_DEV=eth0
            NCCL_SOCKET_IFNAME=eth0

        or, on A3 Mega, ``source $NCCL_LIB_DIR/nccl-env-profile.sh`` with ``NCCL_LIB_DIR=/var/lib/tcpxo/lib64``.
    Cost model:
        No avoidable figure (the fallback's share of each step is unknown); the basis names the job's
        hourly price.
    Sources:
        training-facts §6.3 (TCPX/TCPXO env from GCP cluster-toolkit and dstack examples;
        cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx), §6.1 (EFA FI_* defaults).
    """

    code = "NET003"
    name = "fabric-env-unset"
    severity = Severity.WARNING
    family = "NET"
    since = "0.1.0"
    reads_code = False  # the plugin's variables in the job's environment, the machine and the node count decide it

    VALID = [
        Example({"train.py": _DDP_TRAIN, "sky.yaml": """\
resources:
  instance_type: a3-highgpu-8g
  cloud: gcp
num_nodes: 2
envs:
  NCCL_GPUDIRECTTCPX_SOCKET_IFNAME: eth1,eth2,eth3,eth4
  NCCL_GPUDIRECTTCPX_CTRL_DEV: eth0
  NCCL_SOCKET_IFNAME: eth0
run: |
  torchrun --nnodes 2 --nproc_per_node 8 train.py
"""}, title="complete TCPX settings"),
        Example({"train.py": _DDP_TRAIN, "sky.yaml": """\
resources:
  instance_type: p5.48xlarge
num_nodes: 2
run: |
  torchrun --nnodes 2 --nproc_per_node 8 train.py
"""}, title="EFA without FI_* variables: aws-ofi-nccl sets its defaults"),
    ]
    INVALID = [
        Example({"train.py": _DDP_TRAIN, "sky.yaml": """\
resources:
  instance_type: a3-highgpu-8g
  cloud: gcp
num_nodes: 2
envs:
  NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX: /run/tcpx
run: |
  torchrun --nnodes 2 --nproc_per_node 8 train.py
"""}, expect=[Expect("sky.yaml", 6, ("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "NCCL_GPUDIRECTTCPX_CTRL_DEV", "a3-highgpu-8g"))],
            title="TCPX in use without its interface settings"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not on_gpu(wl):
            return
        hw = compute_of(wl)
        rdma = hw.rdma if hw is not None else None
        nodes = _nodes(wl)
        if rdma not in ("gpudirect-tcpx", "gpudirect-tcpxo") or hw.instance is None or not nodes or nodes < 2:
            return
        env = _env_facts(wl)
        names = {f.value["name"] for f in env}
        prefix, required = ("NCCL_GPUDIRECTTCPX_", _TCPX_REQUIRED) if rdma == "gpudirect-tcpx" else ("NCCL_FASTRAK_", _TCPXO_REQUIRED)
        evidence = [f for f in env if f.value["name"].startswith(prefix)]
        if not evidence or (rdma == "gpudirect-tcpxo" and "NCCL_LIB_DIR" in names):
            return  # plugin not in evidence (NET001's case) or configured by the plugin's own profile
        missing = [n for n in required if n not in names]
        if not missing:
            return
        f = evidence[0]
        yield self.finding(
            f.loc, f"{_FABRIC_NAME[rdma]} is configured ({f.value['name']}) on {nodes} nodes of {hw.instance_name} "
                   f"but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set",
            symbol=f"{rdma}:{','.join(missing)}", workload=wl.name, related=compute_related(wl),
            cost=_job_cost(wl, "a plugin that cannot find its NICs falls back to TCP; the slowdown is not estimated."))


# -- NET004 -----------------------------------------------------------------------------------
_DP_VIA = ("hf_trainer", "lightning", "fabric", "accelerate", "deepspeed", "sft_trainer")


def _grad_bytes(wl: Workload) -> tuple[float, str]:
    """Bytes per parameter that data parallelism reduces each step, and why (training-facts §7).
    Where the dtype is not clear the smaller figure is used, so the estimate is a lower bound."""
    for f in wl.of("config.deepspeed"):
        if f.value.get("bf16") is True or f.value.get("fp16") is True:
            return 2.0, "DeepSpeed fp16/bf16 reduces 2-byte gradients"
    for f in wl.of("precision"):
        v = f.value if isinstance(f.value, dict) else {}
        if v.get("mechanism") in ("model_cast", "deepspeed", "fsdp") and v.get("dtype") in ("bf16", "fp16"):
            return 2.0, f"{v.get('dtype')} {v.get('mechanism').replace('_', ' ')} gives 2-byte gradients"
    if sharding_of(wl).any:  # FSDP/ZeRO in code, configs, HF ``fsdp=`` (through launcher flags) or launcher switches
        return 2.0, "sharded training may reduce in 16 bits (lower bound)"
    ddp = wl.of("ddp")
    if ddp or any((f.value or {}).get("via") in _DP_VIA for f in wl.of("trains")):
        return 4.0, "DDP all-reduces fp32 gradients (autocast keeps parameters and gradients in fp32)"
    return 2.0, "gradient dtype not known; 2 bytes per parameter assumed (lower bound)"


def _data_parallel(wl: Workload) -> bool:
    return bool(wl.of("ddp") or wl.of("sharding") or wl.of("config.deepspeed")
                or any((f.value or {}).get("via") in _DP_VIA for f in wl.of("trains")))


class NetworkBoundDataParallel(Rule):
    """Multi-node data-parallel training whose gradient all-reduce alone takes seconds per step over the instance's network.

    What it does:
        For a multi-node data-parallel workload (DDP, FSDP, DeepSpeed, HF Trainer, Lightning, accelerate)
        whose model size is known and which does not train LoRA adapters only, estimates the ring
        all-reduce time per optimizer step::

            t = 2 (N - 1) / N x S / (network_gbps x 1e9 / 8 x eta)

        with N = nodes x GPUs per node, S = parameters x gradient bytes (4 for DDP's fp32 gradients,
        2 for DeepSpeed 16-bit, a 16-bit model or sharding; x1.5 for ZeRO-3 / FSDP full sharding, whose
        parameter all-gathers add half again) and eta = 0.8 (the middle of the 0.7-0.9 achievable
        fraction). Fires when t is at least ``threshold_seconds`` (default 2 s) per step, and names t,
        S and the bandwidth used. The instance's catalogued network bandwidth is used; a missing EFA
        request (NET001) makes reality worse.
    Why it costs money:
        Every GPU of every node waits for the all-reduce where backward cannot hide it; on a thin
        network the wait can exceed the compute of the step, so most of the bill buys waiting.
    How to fix:
        Move to an instance with more network bandwidth per GPU (p4d 400 Gbps, p5 3200 Gbps), train
        on fewer, larger nodes, reduce what crosses the network (``bf16_compress_hook``, DeepSpeed bf16,
        LoRA), or accumulate gradients over more micro-batches per optimizer step::

            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    Cost model:
        The step's compute time is not known (tokens per step and utilisation are not read), so no
        hourly fraction is claimed. The basis prices the estimated communication time: t seconds per
        step x 1000 steps x the job's hourly price (all nodes) from the catalogue, if none of it
        overlapped with backward.
    Sources:
        training-facts §7: ring all-reduce 2(N-1)/N x S (NVIDIA nccl-tests doc/PERFORMANCE.md, busbw;
        Patarasuk & Yuan 2009); gradient bytes per DDP/DeepSpeed/FSDP; eta 0.7-0.9 is a modelling
        assumption, not a measurement.
    """

    code = "NET004"
    name = "network-bound-data-parallel"
    severity = Severity.WARNING
    family = "NET"
    since = "0.1.0"
    options = {
        "type": "object",
        "properties": {
            "threshold_seconds": {"type": "number", "exclusiveMinimum": 0},
            "efficiency": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        },
        "additionalProperties": False,
    }

    _LLAMA = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM
dist.init_process_group("nccl")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
model = DDP(model.cuda())
opt = torch.optim.AdamW(model.parameters())
for batch in loader:
    model(**batch).loss.backward()
    opt.step()
"""
    VALID = [
        Example({"train.py": _LLAMA, "sky.yaml": """\
resources:
  instance_type: p5.48xlarge
num_nodes: 2
run: |
  torchrun --nnodes 2 --nproc_per_node 8 train.py
"""}, title="3200 Gbps: about 0.07 s per step"),
        Example({"train.py": _LLAMA, "sky.yaml": """\
resources:
  instance_type: g5.12xlarge
run: |
  torchrun --nproc_per_node 4 train.py
"""}, title="one node: all-reduce stays on the node"),
    ]
    INVALID = [
        Example({"train.py": _LLAMA, "sky.yaml": """\
resources:
  instance_type: g5.12xlarge
num_nodes: 4
run: |
  torchrun --nnodes 4 --nproc_per_node 4 train.py
"""}, expect=[Expect("train.py", 7, ("s per step", "40 Gbps", "g5.12xlarge", "Llama-2-7b"))],
            title="Llama-2-7B DDP across 4 x g5.12xlarge (40 Gbps)"),
    ]

    def check_workload(self, wl: Workload, ctx):
        if not wl.trains or not on_gpu(wl) or not _data_parallel(wl):
            return
        if wl.of("peft"):
            return  # only adapter gradients cross the network
        hw, model = compute_of(wl), wl.resolution.model
        if hw is None or model is None:
            return
        nodes, gbps, params = _nodes(wl), hw.network_gbps, model.params
        gpn = hw.gpus_per_node or hw.gpu_count
        if gpn and hw.gpu_count:
            gpn = min(gpn, hw.gpu_count)  # a request beyond the instance's GPUs never schedules
        if not (nodes and nodes > 1 and isinstance(gbps, (int, float)) and gbps > 0 and isinstance(params, int) and gpn):
            return
        eta = float(self.opts.get("efficiency", 0.8))
        threshold = float(self.opts.get("threshold_seconds", 2.0))
        per_param, why = _grad_bytes(wl)
        # parameters gathered forward and backward plus gradients reduce-scattered: 1.5 all-reduces' traffic,
        # counted only where every reading of the facts fully shards (a lower bound)
        stage3 = sharding_of(wl).least in ("zero3", "fsdp_full")
        factor = 1.5 if stage3 else 1.0
        n = nodes * gpn
        size = params * per_param
        seconds = 2 * (n - 1) / n * size * factor / (gbps * 1e9 / 8 * eta)
        if seconds < threshold:
            return
        anchor = (wl.code_facts("ddp") or wl.code_facts("sharding") or wl.code_facts("trains"))
        loc = anchor[0].loc if anchor else Location(wl.entrypoint)
        name = model.name or f"{params / 1e9:.1f}B-parameter model"
        msg = (f"gradient all-reduce of {name} ({params / 1e9:.1f}B params, {size / 1e9:.1f} GB at {per_param:g} B/param"
               f"{', x1.5 for ZeRO-3/FSDP' if stage3 else ''}) across {n} GPUs on {nodes} x {hw.instance_name} takes about "
               f"{seconds:.1f} s per step over {gbps:g} Gbps (eta {eta:g}; threshold {threshold:g} s)")
        c = hw
        if c.usd_per_hour:
            per_k = seconds * 1000 / 3600 * c.usd_per_hour
            cost = CostImpact(None, f"{price_basis(wl)}; {why}; {seconds:.1f} s of all-reduce per step is "
                                    f"${per_k:,.2f} per 1000 steps if none of it overlaps with backward; "
                                    f"the step's compute time is unknown, so no hourly share is claimed.", "low")
        else:
            cost = unpriced(f"No price attached: {c.why_no_price or 'instance unknown'}. {why}; {seconds:.1f} s per step.")
        yield self.finding(loc, msg, symbol=f"allreduce:{hw.instance_name}:{nodes}", workload=wl.name,
                           related=compute_related(wl), cost=cost)


@hookimpl
def gpulint_rules():
    return [RdmaNotEnabled, NcclEnvAntipattern, FabricEnvUnset, NetworkBoundDataParallel]


def _fair_share(hw: ResolvedCompute, req: int, want: int) -> bool:
    """A pod that uses part of a machine's GPUs (a Slinky slurmd pod asking for 4 of a p5's 8) and as large a part
    of its EFA devices has the fabric its GPUs would have: no partial-EFA finding."""
    gpus, total = hw.gpus_per_node, hw.gpu_count
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (gpus, total)) or gpus >= total:
        return False
    return req * total >= want * gpus
