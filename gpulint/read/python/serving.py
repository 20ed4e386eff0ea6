"""Does the file serve a model: the ``serves`` fact (the first sign found, one per file).

A model server or online engine (FastAPI, vLLM, Ray Serve, ...), SageMaker inference handlers, or a serving
handler class (TorchServe, KServe, LitServe, Triton): the rules judge a server's GPU use differently from a
training run's.
"""
from __future__ import annotations

from gpulint.read.python.common import Facts

#: constructors and calls that stand up a model server or an online inference engine
SERVERS = {
    "fastapi.FastAPI": "fastapi", "flask.Flask": "flask", "uvicorn.run": "uvicorn", "litserve.LitServer": "litserve",
    "vllm.LLM": "vllm", "vllm.AsyncLLMEngine.from_engine_args": "vllm", "vllm.engine.async_llm_engine.AsyncLLMEngine.from_engine_args": "vllm",
    "vllm.entrypoints.openai.api_server.run_server": "vllm", "ray.serve.run": "ray-serve", "ray.serve.deployment": "ray-serve",
    "bentoml.Service": "bentoml", "bentoml.service": "bentoml", "kserve.ModelServer": "kserve", "gradio.Interface": "gradio",
    "gradio.ChatInterface": "gradio", "sglang.Engine": "sglang",
}
#: SageMaker's inference-toolkit entry points (a script that defines them is an endpoint handler)
SAGEMAKER_HANDLERS = ("model_fn", "predict_fn", "transform_fn")
#: base classes and class names of serving handlers
SERVING_BASES = {"ts.torch_handler.base_handler.BaseHandler": "torchserve", "kserve.Model": "kserve",
                 "litserve.LitAPI": "litserve", "ls.LitAPI": "litserve"}
SERVING_CLASSES = {"TritonPythonModel": "triton"}


def serving(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls:
        via = SERVERS.get(c.qualname or "")
        if via:
            f.add("serves", {"via": via}, c.node, c.qualname)
            return
    for name in SAGEMAKER_HANDLERS:
        node = ix.top_functions.get(name)
        if node is not None:
            f.add("serves", {"via": f"sagemaker {name}"}, node, name)
            return
    for name, (node, bases) in ix.classes.items():
        via = SERVING_CLASSES.get(name) or next((SERVING_BASES[b] for b in bases if b in SERVING_BASES), None)
        if via:
            f.add("serves", {"via": via}, node, name)
            return
