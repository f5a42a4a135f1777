"""The error quick reference (R12): every error message points here by its symptom."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    symptom: str
    cause: str
    where: str


ENTRIES = [
    Entry("aicore memory out of bound",
          "a local buffer overrun or wrong address arithmetic: an access past a tensor's "
          "window in GM or past the Unified Buffer",
          "tileSize against UB capacity; each block's start offset and count; run with "
          "--debug to check every access against its own tensor"),
    Entry("shape mismatch",
          "logical vs physical shape: a padded storage shape used as the logical one, or "
          "shapes that do not broadcast",
          "layout transforms, padding and alignment parameters (TensorDesc.shape vs "
          "storage_shape); the broadcasting rules in the error"),
    Entry("kernel start failed",
          "runtime and kernel library versions do not match, or an input buffer is not "
          "allocated (freed, or from another device)",
          "`ixl env --check` for the versions; that every input is a live device tensor"),
    Entry("large numeric deviation",
          "accumulation order or type (half-precision accumulation), or a read of a local "
          "buffer that was never (fully) written",
          "accumulate in float32; initialise buffers; run with --debug, which fills fresh "
          "buffers with NaN so such reads show"),
    Entry("far slower than expected",
          "a debug build, tiles too small, or moves and compute not overlapped",
          "run in release mode (no --debug); larger tiles; double buffering (buffer_num 2); "
          "`ixl run ... --profile` shows the bound pipe"),
    Entry("ub overflow",
          "the queues and buffers of one kernel ask for more Unified Buffer than the core has, "
          "or exceed the buffer / event-id limits",
          "the tiling: tile = UB / (tensors x buffers x bytes); the chip spec's ub_bytes, "
          "max_buffers and event_ids_per_position"),
    Entry("illegal instruction",
          "an unaligned address (UB and L1 32 bytes, L0A/L0B 512, L0C 64 and an Mmad "
          "destination 1024) or an instruction parameter out of its range (repeat_times > "
          "255, block_count > 4095, Mmad m/n/k > 4095), or an operand in the wrong memory "
          "(an Mmad's left matrix not in L0A)",
          "offsets into local tensors; the mask / repeat / stride parameters; the params "
          "struct's field the message names"),
    Entry("buffer overflow",
          "the buffers of a Cube kernel ask for more of L1, L0A, L0B, L0C, the BiasTable or "
          "the Fixpipe buffer than the core has",
          "the host tiling's base sizes against the chip spec's l1_bytes, l0a_bytes, "
          "l0b_bytes, l0c_bytes (double buffering doubles each)"),
    Entry("accumulation without init",
          "an Mmad with cmatrix_init_val False adds onto L0C values that are not this tile's "
          "partial sum: stale L0C, or a tile a Fixpipe already copied out",
          "set cmatrix_init_val=True on each tile's first Mmad of its K loop (or start from "
          "the bias)"),
    Entry("truncated copy",
          "a data_copy whose length is not a multiple of 32 bytes: the chip silently copies "
          "less; debug mode refuses it",
          "tails: use data_copy_pad, or round the tile to 32 bytes"),
    Entry("timed out",
          "a wait_flag with no matching set_flag, a set_flag never waited for, a deque of an "
          "empty queue, a cross-core wait no core sets, or unit flags one side never sets: "
          "the core waits forever",
          "pair every set_flag/wait_flag with the same event and id; enque before deque; "
          "each cross_core_wait_flag a matching cross_core_set_flag (mode, flag id, the "
          "other side of the group); unit_flag 3 on both the last Mmad and its Fixpipe"),
    Entry("unsupported dtype",
          "the op (or the vector instruction) has no path for this dtype",
          "`ixl list` for each op's dtypes; bfloat16 computes in float32 on the A2 vector unit"),
    Entry("unknown op", "the op name is not in the op database",
          "`ixl list` for the known ops (names are case-sensitive, ONNX style)"),
    Entry("bad attribute", "an attribute the op does not take, or a value out of its range",
          "the op's schema: `ixl list --json` lists each op's attributes"),
    Entry("out of memory",
          "live device tensors exceed the chip's HBM, or the host cannot hold the simulated "
          "device memory and the host copies a run needs (the message says which limit and "
          "by how much)",
          "free tensors you no longer need (Device.close() reports what is still live); "
          "smaller shapes; `--timing-only` touches no data"),
    Entry("bad input",
          "a value of the wrong kind: a command-line option, an output path, an input file, "
          "an environment variable (IXL_LOG, IXL_THREADS, IXL_DEBUG, IXL_TUNING_CACHE) or a "
          "Python argument",
          "the message names the culprit and what is allowed; `ixl <command> --help`"),
    Entry("pipe hazard",
          "two pipes touch the same bytes (UB, or GM read back by the core that wrote it), one "
          "of them writing, and no sync orders them: the pipes run in parallel, so the result "
          "depends on timing even when the modeled times happen not to overlap; dispatch "
          "order alone orders nothing between two pipes",
          "the flag between the two instructions the error names: enque/deque for a queue's "
          "data, set_flag/wait_flag with the event it suggests (MTE2_V before a vector read, "
          "V_MTE3 before a copy-out, MTE2_S before get_value, MTE3_MTE2 before reading GM "
          "back), or pipe_barrier(ALL)"),
    Entry("use after free",
          "a tensor used after free_tensor gave its buffer back: the queue's next alloc_tensor "
          "may refill it while the late instruction still reads or writes it",
          "move free_tensor after the tensor's last use (the copy-out, for an output queue)"),
    Entry("cross-core race",
          "two cores write the same GM bytes, or one reads bytes another writes, with no "
          "SyncAll between them: the result depends on which core the chip runs first (the "
          "simulator runs the cores interleaved in modeled time; IXL_CORE_ORDER=reverse|shuffle "
          "changes which of two cores meeting on the same cycle goes first)",
          "each core's GM window (offset and count from block_idx); a workspace slot per core; "
          "`yield asc.sync_all()` between writing partials and reading them back"),
    Entry("uninitialised read",
          "a value computed from bytes nothing wrote in this launch (stale UB, a workspace or "
          "output byte never written) reaches GM or the scalar unit; the message names the "
          "instruction that first read the unwritten bytes",
          "copy-in lengths and tails (data_copy_pad pads to 32 bytes, not to a whole repeat), "
          "masks and counts of reductions, duplicate/fill of pad lanes, every workspace slot "
          "written before it is read"),
    Entry("input written",
          "a kernel writes into one of its inputs (used as scratch): the caller's tensor "
          "changes",
          "write into an output or the workspace; an op that really updates an input declares "
          "it in its KernelEntry (inplace=(index,))"),
]


def lookup(symptom: str) -> list[Entry]:
    """Entries whose symptom matches `symptom` (substring, then fuzzy)."""
    s = symptom.lower().strip()
    hits = [e for e in ENTRIES if s in e.symptom or e.symptom in s]
    if hits:
        return hits
    close = difflib.get_close_matches(s, [e.symptom for e in ENTRIES], n=2, cutoff=0.4)
    return [e for e in ENTRIES if e.symptom in close]
