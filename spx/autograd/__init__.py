"""``spx.autograd``: torch's autograd API over :class:`spx.Tensor`.

* torch's form: ``spx.autograd.backward(tensors, grad_tensors)``,
  ``spx.autograd.grad(outputs, inputs)``, and grad mode (``no_grad``, ``enable_grad``,
  ``set_grad_enabled``, ``inference_mode``), as ``torch.autograd`` has them;
* spx's functional forms over Modules (:mod:`spx.autograd.functional`): ``spx.backward(fn,
  model)``, ``spx.value_and_grad(fn)``, ``spx.grad(fn)`` — exported at the top level.

The backward pass runs as a compiled XLA program cached by the structure of what was
recorded (see :mod:`spx._tensor.program`).
"""

from spx._tensor.autograd import backward as backward
from spx._tensor.autograd import grad as grad
from spx._tensor.grad_mode import enable_grad as enable_grad
from spx._tensor.grad_mode import inference_mode as inference_mode
from spx._tensor.grad_mode import is_grad_enabled as is_grad_enabled
from spx._tensor.grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from spx._tensor.grad_mode import no_grad as no_grad
from spx._tensor.grad_mode import set_grad_enabled as set_grad_enabled
from spx.autograd import functional as functional
from spx.autograd.anomaly_mode import detect_anomaly as detect_anomaly
from spx.autograd.anomaly_mode import set_detect_anomaly as set_detect_anomaly
from spx.autograd.function import Function as Function
from spx.autograd.function import FunctionCtx as FunctionCtx
from spx.autograd.function import once_differentiable as once_differentiable
from spx.autograd.variable import Variable as Variable
