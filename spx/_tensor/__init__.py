"""The engine behind :class:`spx.Tensor`: recorded operations, compiled programs, autograd.

* :mod:`.graph` — nodes, storages, grad mode and pending values (per thread);
* :mod:`.dispatch` — recording one operation;
* :mod:`.program` — computing what was recorded as one cached XLA program, and the backward pass;
* :mod:`.autograd` — ``backward`` / ``grad`` in torch's form; :mod:`.grad_mode` — ``no_grad`` & co.;
* :mod:`.tensor` — the Tensor class; its methods live in :mod:`.methods`, one mixin per kind.
"""
