"""``spx.compile(model)``: torch's ``OptimizedModule``, a module wrapping the compiled one.

``torch.compile(model)`` returns a module whose calls run the compiled forward and whose
outputs backpropagate into ``model``'s parameters. spx's eager execution already runs each
step's recorded operations as one cached XLA program (forward and backward together), so the
wrapper calls ``model`` as it is: outputs keep their autograd history, and ``loss.backward()``,
optimizers and ``state_dict()`` work as with torch's wrapper (keys prefixed ``_orig_mod.``).
To compile a whole training step into one program, compile the step function instead.
"""

from __future__ import annotations

from typing import Any

from spx.nn.module import Module


class OptimizedModule(Module):
    """What ``spx.compile(module)`` returns (mirrors ``torch._dynamo.OptimizedModule``).

    Args:
        mod: the wrapped module, kept as ``_orig_mod``.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 2)
        >>> compiled = spx.compile(model)
        >>> compiled(spx.ones(4, 3)).sum().backward()
        >>> model.weight.grad.shape
        spx.Size([2, 3])
        >>> list(compiled.state_dict())
        ['_orig_mod.weight', '_orig_mod.bias']
    """

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            # torch's wrapper answers for the wrapped module's attributes (model.config, ...)
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)
