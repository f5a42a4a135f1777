"""HIXL: what each op means. Imports nothing else of ixl; semantics stand alone."""

from .database import all_ops, get_op, register
from .dtypes import DTYPES, to_numpy
from .errors import AttrError, BadInput, DtypeError, HixlError, ShapeMismatch, UnknownOp
from .schema import ArgSpec, Attr, OpSchema, SampleCase, TileMultiple, Tolerance, broadcast_shapes

__all__ = [
    "all_ops", "get_op", "register", "DTYPES", "to_numpy", "AttrError", "BadInput", "DtypeError",
    "HixlError", "ShapeMismatch", "UnknownOp", "ArgSpec", "Attr", "OpSchema", "SampleCase",
    "TileMultiple", "Tolerance", "broadcast_shapes",
]
