"""The kernel language: everything a kernel file needs, under Ascend C's names in snake_case.

Kernels write `from ixl.ascend import lang as asc` and then `asc.data_copy(...)`,
`asc.add(...)`, `asc.TQue(asc.TPosition.VECIN)`; the mapping to Ascend C is in
docs/architecture.md.
"""

from .core import (
    get_block_idx,
    get_block_num,
    get_sub_block_idx,
    get_task_ratio,
    is_aic,
    is_aiv,
    sync_all,
)
from .crosscore import cross_core_set_flag, cross_core_wait_flag
from .cube.copy import fill
from .cube.fixpipe import fixpipe, quant_word, set_fix_pipe_config
from .cube.load import (
    IsResetLoad3dConfig,
    load_data,
    load_data_with_transpose,
    set_fmatrix,
    set_load_data_padding_value,
)
from .cube.mmad import mmad, set_hf32_mode, set_hf32_trans_mode
from .cube.params import (
    CFG_NZ,
    CFG_ROW_MAJOR,
    FixpipeConfig,
    FixpipeParamsV220,
    InitConstValueParams,
    LoadData2DParams,
    LoadData2dTransposeParams,
    LoadData3DParamsV2,
    MmadParams,
    Nd2NzParams,
    QuantMode,
)
from .datamove import (
    DataCopyExtParams,
    DataCopyPadExtParams,
    DataCopyParams,
    data_copy,
    data_copy_pad,
)
from .gm import GlobalTensor
from .l2 import CacheMode
from .pipe import LocalTensor, TBuf, TPipe, TPosition, TQue, local_tensor
from .schedule import KernelType
from .sync import HardEvent, pipe_barrier, set_flag, wait_flag
from .timeline import Pipe
from .vector import (
    BinaryRepeatParams,
    CmpMode,
    RoundMode,
    UnaryRepeatParams,
    abs,
    add,
    adds,
    brcb,
    cast,
    compare,
    compare_scalar,
    div,
    duplicate,
    exp,
    ln,
    max,
    maxs,
    min,
    mins,
    mul,
    muls,
    reciprocal,
    relu,
    rsqrt,
    select,
    sqrt,
    sub,
    whole_reduce_max,
    whole_reduce_min,
    whole_reduce_sum,
)
from .vector_datamove import (
    TransDataTo5HDParams,
    create_vec_index,
    gather,
    gather_mask,
    trans_data_to_5hd,
)
from .vector_reduce import block_reduce_max, block_reduce_min, block_reduce_sum
from .vector_sort import mrg_sort, sort32

__all__ = [
    "get_block_idx", "get_block_num", "get_sub_block_idx", "get_task_ratio", "is_aic", "is_aiv",
    "sync_all", "cross_core_set_flag", "cross_core_wait_flag", "fill", "fixpipe", "quant_word",
    "set_fix_pipe_config", "IsResetLoad3dConfig", "load_data", "load_data_with_transpose",
    "set_fmatrix", "set_load_data_padding_value", "mmad", "set_hf32_mode", "set_hf32_trans_mode",
    "CFG_NZ", "CFG_ROW_MAJOR", "FixpipeConfig", "FixpipeParamsV220", "InitConstValueParams",
    "LoadData2DParams", "LoadData2dTransposeParams", "LoadData3DParamsV2", "MmadParams",
    "Nd2NzParams", "QuantMode", "KernelType", "local_tensor",
    "DataCopyExtParams", "DataCopyPadExtParams",
    "DataCopyParams", "data_copy", "data_copy_pad", "CacheMode", "GlobalTensor", "LocalTensor",
    "TBuf",
    "TPipe", "TPosition", "TQue", "HardEvent", "pipe_barrier", "set_flag", "wait_flag", "Pipe",
    "BinaryRepeatParams", "brcb", "CmpMode", "compare", "compare_scalar", "select", "RoundMode",
    "UnaryRepeatParams", "abs", "add", "adds", "cast", "div",
    "duplicate", "exp", "ln", "max", "maxs", "min", "mins", "mul", "muls", "reciprocal", "relu",
    "rsqrt", "sqrt", "sub", "whole_reduce_max", "whole_reduce_min", "whole_reduce_sum",
    "block_reduce_max", "block_reduce_min", "block_reduce_sum",
    "TransDataTo5HDParams", "create_vec_index", "gather", "gather_mask", "trans_data_to_5hd",
    "mrg_sort", "sort32",
]
