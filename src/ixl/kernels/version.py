"""The kernel library's version and the runtime it was built against (R6, R14): a kernel built
for runtime M.m starts on runtime M.n with n >= m (`nixl.version.compatible`)."""

KERNEL_LIBRARY_VERSION = "0.2.0"
BUILT_FOR_RUNTIME = "1.0"
