"""COST: how GPU capacity is bought, scaled and watched (the guide's elasticity, mixed-strategy and
governance advice).

These rules judge compute targets (``WorkloadContext.computes``) and serving workloads, not training
code. Always-on capacity is priced per month: the catalogue's hourly price times
``[tool.gpulint.pricing] hours-per-month`` (730 by default), with the basis in the finding.
"""
from __future__ import annotations

from gpulint.rulekit import (
    CPU, CostImpact, Example, Expect, GiB, INFERENCE, Related, ResolvedCompute, Rule, Severity, compute_of,
    hookimpl, unpriced,
)

#: GPU models bought for training: a serving workload on them usually fits something far cheaper
TRAINING_CLASS = ("A100", "H100", "H200", "B200", "GB200")
#: a serving model needs its weights plus room for the KV cache and activations (vLLM reserves 90% by default)
SERVING_HEADROOM = 1.3
_DEV_WORDS = ("dev", "test", "staging", "sandbox", "demo", "playground")


def _monthly(ctx, usd_per_hour: float) -> str:
    return f"${usd_per_hour * ctx.catalogue.hours_per_month:,.0f}/month"


def _hours(ctx) -> str:
    return f"a month of {ctx.catalogue.hours_per_month:g} h ([tool.gpulint.pricing] hours-per-month)"


def _price_words(rc: ResolvedCompute) -> str:
    p = rc.price
    return f"{rc.instance_name} at ${p.unit_usd_per_hour:.2f}/h {p.capacity} ({p.region}, price as of {p.as_of}; {p.source})"


def _users(ctx, compute_id: str):
    """The workloads that run on a compute target: their own, or the capacity their jobs are placed on (in turn)."""
    return ctx.users_of(compute_id)


def _is_gpu(rc: ResolvedCompute) -> bool:
    return rc.device == "gpu"


# -- COST001 --------------------------------------------------------------------------------------
_EKS_MIN2 = """\
resource "aws_eks_node_group" "gpu_training" {
  cluster_name    = "ml"
  node_group_name = "gpu-training"
  node_role_arn   = "arn:aws:iam::123456789012:role/eks-node"
  subnet_ids      = ["subnet-1"]
  instance_types  = ["g5.12xlarge"]

  scaling_config {
    desired_size = 2
    min_size     = 2
    max_size     = 8
  }
}
"""


class GpuCapacityNeverScalesToZero(Rule):
    """A GPU node group, autoscaling group or node pool for training or batch keeps a minimum above zero.

    What it does:
        Reads the floor of every GPU capacity pool: EKS node groups (``scaling_config.min_size``) and
        the eks module's node groups, autoscaling groups, GKE node pools (``autoscaling.min_node_count``),
        AKS node pools (``min_count``), VM scale sets, and KubeRay GPU worker groups
        (``minReplicas`` with the autoscaler on; without ``enableInTreeAutoscaling`` KubeRay keeps
        ``replicas`` pods, which is the floor). It fires when the floor is above zero and the pool is for training or
        batch work: its name or tags say so, or a training workload runs on it (warning); a GPU pool
        no serving workload uses and nothing names is reported as info. Serving pools, whose floor
        keeps an endpoint warm, are left alone (COST006 looks at those).
    Why it costs money:
        Training and batch queues are empty much of the time; a floor of N GPU nodes bills N nodes
        around the clock whether or not a job runs.
    How to fix:
        Let the autoscaler (cluster-autoscaler, Karpenter, GKE/AKS autoscaling) add nodes when jobs
        arrive and remove them when the queue is empty::

            scaling_config {
              min_size     = 0
              desired_size = 0
              max_size     = 8
            }

        Keep a warm floor only for latency-sensitive serving.
    Cost model:
        The floor's price: min nodes x the instance's hourly price on its capacity, which is spent in
        every hour the queue is empty; the basis also gives it per month (hours-per-month, 730 by
        default). How many hours are idle is not known, so the hourly figure is an upper bound.
    Sources:
        The guide's elasticity advice ("scale GPU clusters to zero when queues are empty"); AWS EKS
        managed node groups scaling_config; GKE cluster autoscaler min_node_count; KubeRay autoscaling.
    """

    code = "COST001"
    name = "gpu-capacity-never-scales-to-zero"
    severity = Severity.WARNING
    family = "COST"
    since = "0.2.0"
    VALID = [
        Example({"infra/eks.tf": _EKS_MIN2.replace("desired_size = 2\n    min_size     = 2", "desired_size = 0\n    min_size     = 0")},
                title="the training pool scales to zero"),
        Example({"infra/eks.tf": _EKS_MIN2.replace("gpu_training", "inference").replace("gpu-training", "llm-inference")},
                title="a serving pool keeps a warm floor"),
        Example({"infra/eks.tf": _EKS_MIN2.replace("g5.12xlarge", "m5.2xlarge")}, title="CPU nodes"),
    ]
    INVALID = [
        Example({"infra/eks.tf": _EKS_MIN2}, expect=[Expect("infra/eks.tf", 10, ("gpu_training", "min 2", "g5.12xlarge", "/month"))],
                title="an EKS GPU training node group with min_size = 2"),
    ]

    def check_repo(self, workloads, ctx):
        for rc in sorted(ctx.computes.values(), key=lambda c: c.id):
            if not _is_gpu(rc) or not rc.min_nodes or rc.min_nodes <= 0:
                continue
            if rc.capacity == "reserved":
                continue  # a reservation bills whether or not its nodes run: a lower floor returns nothing
            resource = str(rc.resource or "")
            if rc.source == "kubernetes" and not resource.startswith(("RayCluster/", "RayService/")):
                continue  # an elastic job's minimum ends with the job; only standing pools are judged
            users = _users(ctx, rc.id)
            if rc.target_role in ("serving", "notebook") or any(u.role == INFERENCE for u in users):
                continue
            trained = rc.target_role == "training" or any(u.role != INFERENCE for u in users)
            severity = Severity.WARNING if trained else Severity.INFO
            f = rc.first("compute.min_nodes")
            loc = f.loc if f is not None else rc.loc
            why = "for training" if rc.target_role == "training" else \
                f"{users[0].name} trains on it" if users else "no serving workload uses it and nothing names its purpose"
            name = _pool_name(rc)
            cost = None
            if rc.price is not None and rc.price.unit_usd_per_hour:
                floor = round(rc.min_nodes * rc.price.unit_usd_per_hour, 2)
                cost = CostImpact(round(floor, 2), f"{rc.min_nodes} x {_price_words(rc)} = ${floor:.2f}/h, spent in every hour no job "
                                                   f"runs ({_monthly(ctx, floor)} over {_hours(ctx)} if the queue stays empty); the idle share of "
                                                   f"the month is not known, so this is an upper bound.", "low")
            ray_fixed = resource.startswith(("RayCluster/", "RayService/")) and f is not None and \
                not str(f.key or "").endswith("minReplicas")
            yield self.finding(
                loc, f"GPU pool {name} ({rc.instance_name or rc.instance_written or 'GPU instance'}) keeps min {rc.min_nodes} "
                     f"{'pod' if resource.startswith('Ray') else 'node'}{'s' if rc.min_nodes > 1 else ''} while idle ({why})"
                     + (" (no autoscaler: KubeRay keeps `replicas` pods; enableInTreeAutoscaling: true with minReplicas: 0 "
                        "lets it scale down)" if ray_fixed else "")
                     + (f": {_monthly(ctx, cost.usd_per_hour)} if nothing runs" if cost else ""),
                symbol=f"{rc.target}:min", severity=severity, cost=cost,
                related=[Related(rc.loc, f"{rc.resource}")] + [Related(u.compute.loc if u.compute else rc.loc, f"runs {u.name}") for u in users[:2]])


def _pool_name(rc: ResolvedCompute) -> str:
    f = rc.first("compute.target")
    ev = (f.attrs or {}).get("role_evidence") if f is not None else None
    label = rc.target.rsplit(".", 1)[-1]
    return f"{rc.target}" + (f" ({ev})" if ev and f"'{label}'" not in ev else "")


_TERMS = {"1yr": "1-year", "3yr": "3-year", "any": "1- or 3-year"}


# -- COST002 --------------------------------------------------------------------------------------
_PROVIDER_BUDGET = {"aws": ("aws_budgets_budget", "a CloudWatch EstimatedCharges alarm"), "gcp": ("google_billing_budget",),
                    "azure": ("azurerm_consumption_budget_*",)}


#: the budget to add, in the provider's own resource (the docstring's example is AWS's)
_BUDGET_GUIDANCE = {
    "aws": ("Add a monthly budget with an alert at a share of it: resource \"aws_budgets_budget\" with budget_type = \"COST\", "
            "limit_amount, time_unit = \"MONTHLY\" and a notification block (threshold 80, FORECASTED) to the team's address."),
    "gcp": ("Add a billing budget with alert thresholds: resource \"google_billing_budget\" with billing_account, "
            "budget_filter { projects = [\"projects/<number>\"] }, amount { specified_amount { currency_code = \"USD\", "
            "units = \"20000\" } } and threshold_rules { threshold_percent = 0.8 }."),
    "azure": ("Add a consumption budget: resource \"azurerm_consumption_budget_subscription\" (or _resource_group) with "
              "amount, time_grain = \"Monthly\", a time_period and a notification block (threshold = 80, "
              "operator = \"GreaterThan\", contact_emails)."),
}


class NoBudgetAlert(Rule):
    """The infrastructure provisions GPU capacity and defines no budget or spend alarm.

    What it does:
        Looks at the Terraform of the repository: when it creates GPU compute for a provider (AWS,
        GCP, Azure) and defines no budget for that provider (``aws_budgets_budget`` or a CloudWatch
        ``EstimatedCharges`` alarm, ``google_billing_budget``, ``azurerm_consumption_budget_*``),
        it reports the first GPU resource. Budgets are often kept in an account-level repository,
        so this is info.
    Why it costs money:
        A forgotten GPU cluster or a runaway job is noticed on the invoice a month later; a budget
        alert notices it in hours.
    How to fix:
        Add a monthly budget with an alert at a share of it::

            resource "aws_budgets_budget" "gpu" {
              name         = "gpu-monthly"
              budget_type  = "COST"
              limit_amount = "20000"
              limit_unit   = "USD"
              time_unit    = "MONTHLY"
              notification {
                comparison_operator        = "GREATER_THAN"
                threshold                  = 80
                threshold_type             = "PERCENTAGE"
                notification_type          = "FORECASTED"
                subscriber_email_addresses = ["ml-platform@example.com"]
              }
            }
    Cost model:
        None: a budget does not save money by itself, it bounds how long an overspend goes unseen.
    Sources:
        The guide's governance advice (budgets and spend alarms); AWS Budgets, GCP billing budgets,
        Azure consumption budgets.
    """

    code = "COST002"
    name = "no-budget-alert"
    severity = Severity.INFO
    family = "COST"
    since = "0.2.0"
    VALID = [
        Example({"infra/eks.tf": _EKS_MIN2, "infra/budget.tf": 'resource "aws_budgets_budget" "gpu" {\n  name = "gpu"\n  budget_type = "COST"\n'
                                                                '  limit_amount = "20000"\n  limit_unit = "USD"\n  time_unit = "MONTHLY"\n}\n'}),
    ]
    INVALID = [
        Example({"infra/eks.tf": _EKS_MIN2}, expect=[Expect("infra/eks.tf", 1, ("aws", "aws_budgets_budget"))], config='select = ["COST002"]\n'),
    ]

    def check_repo(self, workloads, ctx):
        budgets = {str(f.value.get("resource", "")).split("_", 1)[0] for f in ctx.repo.all("infra.budget")}
        have = {"aws" if b == "aws" else "gcp" if b == "google" else "azure" if b == "azurerm" else b for b in budgets}
        by_provider: dict[str, list[ResolvedCompute]] = {}
        for rc in sorted(ctx.computes.values(), key=lambda c: c.id):
            if rc.source == "terraform" and _is_gpu(rc) and rc.provider in _PROVIDER_BUDGET:
                by_provider.setdefault(rc.provider, []).append(rc)
        for provider, rcs in sorted(by_provider.items()):
            if provider in have:
                continue
            first = rcs[0]
            names = ", ".join(c.target for c in rcs[:3]) + (f" and {len(rcs) - 3} more" if len(rcs) > 3 else "")
            yield self.finding(
                first.loc, f"{len(rcs)} {provider} GPU resource{'s' if len(rcs) > 1 else ''} ({names}) and no "
                           f"{' or '.join(_PROVIDER_BUDGET[provider])} anywhere in the repository",
                symbol=f"budget:{provider}", guidance=_BUDGET_GUIDANCE[provider])


# -- COST003 --------------------------------------------------------------------------------------
_VLLM = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
spec:
  replicas: 1
  selector:
    matchLabels: {app: chat}
  template:
    metadata:
      labels: {app: chat}
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: p4d.24xlarge
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.6.3
          args: ["--model", "meta-llama/Llama-2-7b-hf", "--dtype", "bfloat16"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""


class OversizedInferenceInstance(Rule):
    """A serving workload runs on training-class GPUs (or a fraction of a big node) while its model fits a far cheaper instance.

    What it does:
        For every inference workload (a Kubernetes Deployment or KServe InferenceService, a SageMaker
        endpoint, serving code) whose instance and model are known, it sizes what serving needs:
        the weights in 16 bit (or their quantized size) times 1.3 for the KV cache and activations.
        It fires when the workload runs on A100/H100/H200/B200 GPUs, or requests fewer GPUs than its
        node has, and a catalogue instance of the same provider with enough GPU memory costs at most
        half as much per hour. It names that instance and the monthly difference per replica.
    Why it costs money:
        Training-class GPUs are priced for their interconnect and peak math; a 7B chat model served
        from one A100 of an 8-GPU node leaves most of the node billed and idle.
    How to fix:
        Move the deployment to the named instance (or an inference instance: L4, A10G, L40S,
        Inferentia2), for example ``node.kubernetes.io/instance-type: g5.2xlarge``, and load-test it.
    Cost model:
        (current node price - candidate price) x replicas, per hour and per month (hours-per-month);
        on-demand list prices unless the workload runs on spot. Where the pod uses a share of a
        bigger node, the whole node is counted, assuming nothing else is scheduled there.
    Sources:
        The guide's advice on choosing inference instances; vLLM's gpu_memory_utilization default (0.9).
    """

    code = "COST003"
    name = "oversized-inference-instance"
    severity = Severity.WARNING
    family = "COST"
    since = "0.2.0"
    roles = ("inference",)
    VALID = [Example({"k8s/chat.yaml": _VLLM.replace("p4d.24xlarge", "g5.2xlarge")}, title="a 7B model on one A10G")]
    INVALID = [Example({"k8s/chat.yaml": _VLLM}, expect=[Expect("k8s/chat.yaml", 14, ("p4d.24xlarge", "Llama-2-7b", "/month less"))],
                       title="a 7B model on one A100 of a p4d.24xlarge")]

    def check_workload(self, wl, ctx):
        c, model = compute_of(wl), wl.resolution.model
        if c is None or c.instance is None or model is None or c.price is None or not c.price.unit_usd_per_hour:
            return
        inst = c.instance
        uses = c.gpus_per_node or inst.gpu_count
        big = str(inst.gpu_model).startswith(TRAINING_CLASS)
        partial = uses < inst.gpu_count
        if not big and not partial:
            return
        per_param = 0.55 if model.load_in_4bit else 1.0 if model.load_in_8bit else 2.0
        need = model.params * per_param * SERVING_HEADROOM
        cat = ctx.catalogue
        cap = c.price.capacity
        best = None
        for cand in cat.instances():
            if cand.provider != inst.provider or cand.name == inst.name or cand.retired:
                continue
            if str(cand.gpu_model).startswith(TRAINING_CLASS) or str(cand.gpu_model).startswith(("Trainium", "Inferentia")):
                continue  # another training-class part, or a non-CUDA accelerator the image may not support
            if cand.gpu_count * cand.gpu_memory_gib * GiB < need:
                continue
            price = cat.price(cand, cap).usd_per_hour
            if not price or price > 0.5 * c.price.unit_usd_per_hour:
                continue
            if best is None or price < best[1]:
                best = (cand, price)
        if best is None:
            return
        cand, price = best
        replicas = c.nodes or 1
        diff = round((c.price.unit_usd_per_hour - price) * replicas, 2)  # one figure for the message, cost and table
        how = (f"{uses} of {inst.gpu_count} {inst.gpu_model} GPUs" if partial else f"{inst.gpu_count}x {inst.gpu_model}")
        yield self.finding(
            c.instance_loc or c.loc,
            f"{model.name or 'the model'} ({model.params / 1e9:.1f}B params, ~{need / GiB:.0f} GiB to serve) runs on {c.instance_name} "
            f"({how}); {cand.name} ({cand.gpu_count}x {cand.gpu_model}, {cand.gpu_count * cand.gpu_memory_gib:g} GiB) holds it for "
            f"${price:.2f}/h instead of ${c.price.unit_usd_per_hour:.2f}/h: {_monthly(ctx, diff)} less"
            + (f" for {replicas} replicas" if replicas > 1 else ""),
            symbol=f"{wl.name}:{inst.name}", workload=wl.name,
            cost=CostImpact(round(diff, 2), f"({_price_words(c)} - {cand.name} at ${price:.2f}/h {cap}) x {replicas} replica(s) = "
                                            f"${diff:.2f}/h ({_monthly(ctx, diff)} over {_hours(ctx)}); serving needs ~{need / GiB:.0f} GiB: weights at "
                                            f"{per_param:g} B/param x {SERVING_HEADROOM} for the KV cache ({model.evidence})"
                                            + ("; the whole node is counted, assuming nothing else runs on it" if partial else ""),
                            "low" if partial else "medium"),
            related=[Related(c.loc, f"{c.id}")])


# -- COST004 --------------------------------------------------------------------------------------
class ServingOnSpotWithoutFallback(Rule):
    """A production serving workload runs only on spot / preemptible capacity, with no on-demand fallback.

    What it does:
        For inference workloads whose compute is spot (a Karpenter NodePool that allows only
        ``spot``, a spot-only node pool, a GKE spot node selector, a spot toleration, SkyPilot
        ``use_spot``) and that show no on-demand alternative (SkyPilot ``any_of`` with an on-demand
        choice, SkyServe ``dynamic_ondemand_fallback``/``base_ondemand_fallback_replicas``), it
        fires. Workloads named for development or tests are left alone. A bare Deployment or
        StatefulSet of one replica that no autoscaler of its file scales (a HorizontalPodAutoscaler or
        KEDA ScaledObject naming it) is a single pod, not evidently a production endpoint: info.
    Why it costs money:
        When spot capacity is reclaimed, every replica can go at once: the endpoint is down until
        spot returns, and a cold start of a large model takes minutes.
    How to fix:
        Allow both capacity types so the scheduler falls back (Karpenter
        ``karpenter.sh/capacity-type In [spot, on-demand]``), or keep a small on-demand floor and
        put the burst on spot.
    Cost model:
        None: the cost is downtime, not compute.
    Sources:
        The guide's mixed-strategy advice (steady inference on reserved or on-demand capacity,
        volatile work on spot); Karpenter capacity-type docs.
    """

    code = "COST004"
    name = "serving-on-spot-without-fallback"
    severity = Severity.WARNING
    family = "COST"
    since = "0.2.0"
    roles = ("inference",)
    VALID = [Example({"k8s/chat.yaml": _VLLM.replace("p4d.24xlarge", "g5.2xlarge")}, title="on-demand serving")]
    INVALID = [Example({"k8s/chat.yaml": _VLLM.replace("p4d.24xlarge", "g5.2xlarge").replace("replicas: 1", "replicas: 2").replace(
        "        node.kubernetes.io/instance-type: g5.2xlarge\n",
        "        node.kubernetes.io/instance-type: g5.2xlarge\n        karpenter.sh/capacity-type: spot\n")},
        expect=[Expect("k8s/chat.yaml", 15, ("spot", "fallback"))], title="two replicas pinned to spot nodes")]

    def check_workload(self, wl, ctx):
        c = compute_of(wl)
        if c is None or c.capacity != "spot" or c.on_demand_fallback or c.device == CPU:
            return
        if any(w in wl.name.lower() for w in _DEV_WORDS):
            return
        # a bare Deployment of one replica that nothing scales is a single pod, not evidently a production endpoint
        # (a tutorial's deliberate saving); a SkyServe service, a managed endpoint or an autoscaled set is one
        floor = c.first("compute.min_nodes")
        autoscaled = floor is not None and bool((floor.attrs or {}).get("autoscaler"))
        single = c.source == "kubernetes" and str(c.resource or "").startswith(("Deployment/", "StatefulSet/")) and \
            (c.nodes or 1) <= 1 and not autoscaled
        how = ("In the SkyServe service, set replica_policy.dynamic_ondemand_fallback: true (or base_ondemand_fallback_replicas: 1), "
               "or list an on-demand alternative in resources.any_of." if c.source == "skypilot" else
               "Allow both capacity types so the scheduler falls back (Karpenter karpenter.sh/capacity-type In [spot, on-demand]), "
               "or keep a small on-demand floor and put the burst on spot.")
        yield self.finding(c.capacity_loc or c.loc,
                           f"serving workload {wl.name} runs only on spot capacity ({c.instance_name or c.id}) with no on-demand fallback"
                           + (" (one replica and no autoscaler: not evidently a production endpoint)" if single else ""),
                           symbol=f"{wl.name}:spot", workload=wl.name, guidance=how, severity=Severity.INFO if single else None,
                           cost=CostImpact(None, "No hourly figure: the cost is downtime when spot capacity is reclaimed.", "high"))


# -- COST005 --------------------------------------------------------------------------------------
_NOTEBOOK = """\
resource "aws_sagemaker_notebook_instance" "research" {
  name          = "research"
  role_arn      = "arn:aws:iam::123456789012:role/sm"
  instance_type = "ml.g5.2xlarge"
}
"""


class IdleDevInstanceNoAutostop(Rule):
    """A notebook or development GPU instance has no idle shutdown.

    What it does:
        Fires for a SageMaker notebook instance on a GPU type without a lifecycle configuration
        (where the idle auto-stop script lives), and, as info, for a GPU VM named or tagged for
        notebooks or development (``jupyter``, ``workbench``, ``dev box`` ...) with no idle shutdown
        in the repository.
    Why it costs money:
        Development instances are used a few hours a day and left running at night and over
        weekends: most of their hours are idle.
    How to fix:
        Attach an idle auto-stop: a SageMaker lifecycle configuration running the
        ``autostop.py`` sample (``lifecycle_config_name = aws_sagemaker_notebook_instance_lifecycle_configuration.autostop.name``),
        Vertex Workbench ``idle-timeout-seconds`` metadata, or an instance scheduler for VMs.
    Cost model:
        The instance's hourly price is spent in every idle hour; the basis gives it per month. The
        idle share is not known, so the figure is an upper bound.
    Sources:
        The guide's advice to shut idle development instances down; AWS sample
        "amazon-sagemaker-notebook-instance-lifecycle-config-samples" (auto-stop-idle).
    """

    code = "COST005"
    name = "idle-dev-instance-no-autostop"
    severity = Severity.WARNING
    family = "COST"
    since = "0.2.0"
    VALID = [Example({"infra/nb.tf": _NOTEBOOK.replace('  instance_type = "ml.g5.2xlarge"\n',
                                                         '  instance_type = "ml.g5.2xlarge"\n  lifecycle_config_name = "autostop"\n')},
                     title="a lifecycle configuration is attached")]
    INVALID = [Example({"infra/nb.tf": _NOTEBOOK}, expect=[Expect("infra/nb.tf", 1, ("research", "ml.g5.2xlarge", "lifecycle"))])]

    def check_repo(self, workloads, ctx):
        for rc in sorted(ctx.computes.values(), key=lambda c: c.id):
            if rc.target_role != "notebook" or not _is_gpu(rc):
                continue
            target = rc.first("compute.target")
            attrs = (target.attrs or {}) if target is not None else {}
            if attrs.get("kernel"):
                continue  # a Studio kernel's instance: idle shutdown is the domain's setting, outside the repository
            sagemaker = "sagemaker_notebook" in str(rc.resource)
            if sagemaker and attrs.get("lifecycle_config"):
                continue
            if not sagemaker and (attrs.get("idle_shutdown") or attrs.get("autostop")):
                continue
            cost = None
            if rc.price is not None and rc.price.unit_usd_per_hour:
                cost = CostImpact(rc.price.unit_usd_per_hour, f"{_price_words(rc)}, spent in every idle hour "
                                                              f"({_monthly(ctx, rc.price.unit_usd_per_hour)} over {_hours(ctx)} if left on); the idle share is "
                                                              f"not known, so this is an upper bound.", "low")
            what = ("has no lifecycle configuration (where an idle auto-stop would run)" if sagemaker
                    else "has no idle shutdown anywhere in the repository")
            machine = rc.instance_written or rc.instance_name
            on = f" ({machine})" if machine else (f" ({rc.gpus_per_node} GPU(s), machine type not named)" if rc.gpus_per_node else "")
            yield self.finding(rc.loc, f"notebook/development instance {rc.target}{on} {what}",
                               symbol=f"{rc.target}:autostop", cost=cost,
                               severity=Severity.WARNING if sagemaker else Severity.INFO)


# -- COST006 --------------------------------------------------------------------------------------
class SteadyServingOnOnDemand(Rule):
    """A serving workload runs around the clock on on-demand capacity, where a commitment costs less.

    What it does:
        For inference workloads with at least one replica always on (a Deployment's replicas, an
        endpoint's initial count; no scale-to-zero) on on-demand capacity with a known price, it
        looks up the catalogue's 1- and 3-year commitment prices (Savings Plans, reserved
        instances, committed-use discounts) and reports the saving. Capacity named in
        ``[tool.gpulint.pricing] commitments`` is already committed and stays silent. A SageMaker
        endpoint (``ml.*``) is covered by SageMaker Savings Plans, not by the EC2 plans the catalogue
        prices: it is named without a figure. A compute that is a training job (an Estimator or
        ModelTrainer that runs a serving script once, to compile or export its model) serves nothing.
    Why it costs money:
        Steady serving is the textbook case for commitments: the same hours cost a third to two
        thirds less when they are committed for a year or three.
    How to fix:
        Buy a Compute Savings Plan / reserved capacity / committed-use discount for the steady
        floor, and keep bursts on on-demand or spot; then list it under
        ``[tool.gpulint.pricing] commitments = ["g5.*"]``.
    Cost model:
        (on-demand - committed hourly price) x always-on replicas, per month. Where the catalogue has
        only a provider's "up to" figure, the finding says "up to" and attaches no figure.
    Sources:
        The guide's mixed-strategy advice; AWS Savings Plans FAQ; GCP committed use discounts.
    """

    code = "COST006"
    name = "steady-serving-on-on-demand"
    severity = Severity.INFO
    family = "COST"
    since = "0.2.0"
    roles = ("inference",)
    VALID = [Example({"k8s/chat.yaml": _VLLM.replace("p4d.24xlarge", "g5.2xlarge")}, config='[pricing]\ncommitments = ["g5.*"]\n',
                     title="already committed")]
    INVALID = [Example({"infra/ep.tf": 'resource "aws_sagemaker_endpoint_configuration" "chat" {\n  name = "chat"\n'
                                       '  production_variants {\n    variant_name = "main"\n    model_name = "chat"\n'
                                       '    instance_type = "ml.g5.2xlarge"\n    initial_instance_count = 2\n  }\n}\n'},
                       expect=[Expect("infra/ep.tf", 6, ("ml.g5.2xlarge", "SageMaker Savings Plan"))])]

    def check_workload(self, wl, ctx):
        c = compute_of(wl)
        if c is None or c.instance is None or c.capacity != "on-demand" or c.price is None or not c.price.unit_usd_per_hour:
            return
        if c.target_role == "training":
            # the compute is a job (a SageMaker Estimator/ModelTrainer, a Determined experiment) that runs the script
            # once and ends, as a script with a model_fn may be run to compile or export the model: it serves nothing
            return
        replicas = c.min_nodes if c.min_nodes is not None else c.nodes
        if not replicas or replicas < 1:
            return  # scales to zero: not steady
        cat = ctx.catalogue
        held = cat.committed(c.instance)
        if held:
            return
        offers = [x for x in (cat.commitment(c.instance, "1yr"), cat.commitment(c.instance, "3yr")) if x is not None]
        if not offers:
            return
        best = max(offers, key=lambda x: x.discount_pct)
        if (c.instance_written or "").startswith("ml."):
            # a SageMaker endpoint: EC2 Instance Savings Plans (the catalogue's offers for the EC2 twin) do not cover
            # ml.* usage; SageMaker Savings Plans do, at rates the catalogue does not hold
            yield self.finding(c.instance_loc or c.loc,
                               f"{wl.name} serves around the clock on {replicas} on-demand {c.instance_written}: a 1- or 3-year "
                               f"SageMaker Savings Plan covers ml.* endpoint usage at a lower rate (EC2 Instance Savings Plans do not)",
                               symbol=f"{wl.name}:commitment", workload=wl.name,
                               cost=unpriced("No figure: gpulint's catalogue holds EC2 commitment rates, not SageMaker Savings "
                                             "Plans rates; compare them in the AWS pricing calculator."))
            return
        od = c.price.unit_usd_per_hour * replicas
        if best.up_to:
            cost = CostImpact(None, f"{_price_words(c)} x {replicas} always on; {best.plan}: up to {best.discount_pct:g}% "
                                    f"({best.source}, {best.as_of}) - a provider's maximum, not this instance's rate, so no figure.", "low")
            saving = f"up to {best.discount_pct:g}% less"
        else:
            committed = (best.usd_per_hour or 0) * replicas
            diff = round(od - committed, 2)
            cost = CostImpact(round(diff, 2), f"{_price_words(c)} x {replicas} = ${od:.2f}/h on-demand vs ${committed:.2f}/h on a "
                                              f"{best.term} {best.plan} ({best.region}, {best.as_of}; {best.source}): "
                                              f"${diff:.2f}/h, {_monthly(ctx, diff)} over {_hours(ctx)}", "medium")
            saving = f"{best.discount_pct:.0f}% less ({_monthly(ctx, diff)})"
        plan = best.plan.split("(")[0].split(";")[0].strip()
        yield self.finding(c.instance_loc or c.loc,
                           f"{wl.name} serves around the clock on {replicas} on-demand {c.instance_written or c.instance_name}: a "
                           f"{_TERMS.get(best.term, best.term)} commitment ({plan}) costs {saving}",
                           symbol=f"{wl.name}:commitment", workload=wl.name, cost=cost)


# -- COST007 --------------------------------------------------------------------------------------
class GpuClusterWithoutUtilisationMonitoring(Rule):
    """The repository defines a GPU cluster and installs no GPU utilisation metrics.

    What it does:
        When Kubernetes GPU capacity is defined (EKS/GKE/AKS GPU node groups and pools in Terraform,
        Karpenter GPU NodePools) and nothing in the repository installs GPU metrics (the NVIDIA DCGM
        exporter, the GPU operator, CloudWatch agent ``nvidia_gpu`` metrics, GKE managed DCGM), it
        reports the first GPU pool. Monitoring may live in another repository, so this is info.
    Why it costs money:
        Without per-GPU utilisation nobody sees the idle and half-used GPUs the other rules
        estimate; cost per run cannot be measured.
    How to fix:
        Install the DCGM exporter (``helm install dcgm-exporter gpu-helm-charts/dcgm-exporter``) or
        the GPU operator, or enable GKE's managed DCGM metrics, and chart ``DCGM_FI_DEV_GPU_UTIL``.
    Cost model:
        None: it measures, it does not save by itself.
    Sources:
        The guide's monitoring advice (GPU utilisation and cost per run); NVIDIA DCGM exporter.
    """

    code = "COST007"
    name = "gpu-cluster-without-utilisation-monitoring"
    severity = Severity.INFO
    family = "COST"
    since = "0.2.0"
    VALID = [Example({"infra/eks.tf": _EKS_MIN2, "k8s/dcgm.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: dcgm-exporter\n"
                                                                    "spec:\n  template:\n    spec:\n      containers:\n        - name: e\n"
                                                                    "          image: nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5\n"})]
    INVALID = [Example({"infra/eks.tf": _EKS_MIN2}, expect=[Expect("infra/eks.tf", 1, ("gpu_training", "DCGM"))], config='select = ["COST007"]\n')]

    _CLUSTER = ("aws_eks_node_group", "google_container_node_pool", "google_container_cluster", "azurerm_kubernetes_cluster",
                "module.", "NodePool/", "Provisioner/")

    def check_repo(self, workloads, ctx):
        if any(True for _ in ctx.repo.all("infra.gpu_monitoring")):
            return
        pools = [rc for rc in sorted(ctx.computes.values(), key=lambda c: c.id)
                 if _is_gpu(rc) and str(rc.resource or "").startswith(self._CLUSTER)]
        if not pools:
            return
        first = pools[0]
        yield self.finding(first.loc, f"{len(pools)} Kubernetes GPU pool{'s' if len(pools) > 1 else ''} ({first.target}"
                                      f"{' ...' if len(pools) > 1 else ''}) and no GPU metrics (DCGM exporter, GPU operator, CloudWatch "
                                      f"nvidia_gpu, GKE managed DCGM) installed in the repository", symbol="gpu-monitoring")


@hookimpl
def gpulint_rules():
    return [GpuCapacityNeverScalesToZero, NoBudgetAlert, OversizedInferenceInstance, ServingOnSpotWithoutFallback,
            IdleDevInstanceNoAutostop, SteadyServingOnOnDemand, GpuClusterWithoutUtilisationMonitoring]
