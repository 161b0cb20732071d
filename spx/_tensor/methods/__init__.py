"""The methods of :class:`spx.Tensor`, one mixin per kind (shape, math, reduction, ...)."""
