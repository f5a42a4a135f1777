"""Ops that only re-describe a contiguous tensor: the runtime answers them with a view of the
same device memory (no kernel, no copy, no modeled time), as a production runtime does."""

VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
