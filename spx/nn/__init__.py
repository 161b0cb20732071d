"""spx.nn: torch-shaped modules, parameters, functional ops and init."""

import importlib
from typing import Any

from spx.nn.module import Module as Module
from spx.nn.parameter import Parameter as Parameter
from spx.nn.parameter import UninitializedParameter as UninitializedParameter

# Files being written in parallel; converted to explicit re-exports once they exist.
_FILES = {
    "linear": "Linear LazyLinear Identity Bilinear",
    "container": "Sequential ModuleList ModuleDict ParameterList ParameterDict",
    "sparse": "Embedding",
    "normalization": "LayerNorm RMSNorm GroupNorm",
    "batchnorm": "BatchNorm1d BatchNorm2d",
    "dropout": "Dropout",
    "flatten": "Flatten Unflatten",
    "activation": "ReLU GELU SiLU Tanh Sigmoid Softmax LogSoftmax LeakyReLU ELU Softplus Mish",
    "conv": "Conv1d Conv2d",
    "pooling": "MaxPool2d AvgPool2d AdaptiveAvgPool2d",
    "attention": "MultiheadAttention",
    "loss": "CrossEntropyLoss NLLLoss MSELoss L1Loss SmoothL1Loss BCELoss BCEWithLogitsLoss",
}
_LAZY = {name: f"spx.nn.modules.{f}" for f, names in _FILES.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in ("utils", "functional", "init"):
        return importlib.import_module(f"spx.nn.{name}")
    raise AttributeError(f"module 'spx.nn' has no attribute {name!r}")
