"""ixl.onnx: ONNX models as ixl graphs on a simulated Ascend chip (`IxlBackend`)."""

from .backend import IxlBackend, IxlBackendRep, RunConvertedRep
from .convert import Converted, ValueSpec, convert
from .errors import NeedsShapes, UnsupportedOnnx
from .node_cases import node_case_counts
from .session import InferenceSession
from .translate import onnx_ops

__all__ = ["IxlBackend", "IxlBackendRep", "RunConvertedRep", "InferenceSession", "Converted",
           "ValueSpec", "convert", "node_case_counts", "NeedsShapes", "UnsupportedOnnx",
           "onnx_ops"]
