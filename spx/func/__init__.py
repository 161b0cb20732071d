"""``spx.func``: torch.func's composable transforms on spx modules and Tensors.

Per-sample gradients, model ensembling and meta-learning written with ``torch.func`` port by
the rename: ``functional_call`` runs a Module as a pure function of a parameter dict,
``stack_module_state`` stacks M models' state for ``vmap``, and ``grad``, ``vjp``, ``jvp``,
``jacrev``, ``jacfwd``, ``hessian`` and ``vmap`` are JAX's transforms with torch's argument
conventions, taking and returning spx Tensors.

Example:
    >>> import spx
    >>> from spx.func import functional_call, grad, vmap
    >>> model = spx.nn.Linear(3, 1)
    >>> params = {k: v.detach() for k, v in model.named_parameters()}
    >>> def loss(p, x, y):
    ...     return ((functional_call(model, p, (x,)) - y) ** 2).mean()
    >>> per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, spx.ones(8, 3), spx.ones(8, 1))
    >>> per_sample["weight"].shape
    spx.Size([8, 1, 3])
"""

from spx.func._functional_call import functional_call as functional_call
from spx.func._grad import grad as grad
from spx.func._grad import grad_and_value as grad_and_value
from spx.func._jacobian import hessian as hessian
from spx.func._jacobian import jacfwd as jacfwd
from spx.func._jacobian import jacrev as jacrev
from spx.func._jvp import jvp as jvp
from spx.func._stack_module_state import stack_module_state as stack_module_state
from spx.func._vjp import vjp as vjp
from spx.func._vmap import vmap as vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "stack_module_state",
    "vjp",
    "vmap",
]
