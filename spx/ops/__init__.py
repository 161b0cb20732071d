"""torch's top-level functions returning Tensors (re-exported by ``spx``)."""
