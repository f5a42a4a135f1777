"""The Cube core's instructions (AIC): moves into L1 and the BiasTable (copy.py), L1 -> L0A/L0B
loads (load.py), the matrix multiply (mmad.py) and the way out of L0C (fixpipe.py), with their
parameter structs (params.py) and operand checks (operands.py). Data in L0A, L0B and L0C is
kept in the fractal orders the Cube reads and writes (ZZ, ZN, NZ: ixl.hixl.formats), so a
kernel that loads the wrong layout computes wrong numbers, as on the chip."""
