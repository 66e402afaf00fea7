"""Fills every SM's shared memory with a known bad value, for the candidate job's repeated check.

Shared memory is not cleared between kernels: a kernel that reads slots it never wrote (HACKS B12)
computes with whatever an earlier kernel left there, and passes while that happens to be harmless.
Before the repeat of check 0 the judge scribbles on it. By default that is a row softmax over random
data (what it leaves is luck). With $CUDA_AGENT_SMEM_FILL=1 it writes 3.0e38 into all of it: a kernel
of our own (PTX, loaded through the CUDA driver API that torch already initialised), blocks asking
for the largest shared memory a block may have, twice as many as there are SMs; a max-reduction that
reads such a slot returns 3.0e38 and a sum overflows, so the repeat fails for sure. That kernel is
opt-in until it has run on a GPU (docs/hacks.md, B12); where it cannot be loaded the softmax is used.
"""

from __future__ import annotations

import ctypes
import os
import struct

import torch

FILL_BITS = struct.unpack("<I", struct.pack("<f", 3.0e38))[0]
BLOCK_THREADS = 1024

PTX = r"""
.version 8.0
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 cuda_agent_smem[];

.visible .entry cuda_agent_fill_shared(.param .u32 words, .param .u32 value)
{
    .reg .pred  %p;
    .reg .b32   %n, %v, %i, %step, %base, %offset, %addr;
    ld.param.u32    %n, [words];
    ld.param.u32    %v, [value];
    mov.u32         %i, %tid.x;
    mov.u32         %step, %ntid.x;
    mov.u32         %base, cuda_agent_smem;
LOOP:
    setp.ge.u32     %p, %i, %n;
    @%p bra         DONE;
    shl.b32         %offset, %i, 2;
    add.u32         %addr, %base, %offset;
    st.shared.u32   [%addr], %v;
    add.u32         %i, %i, %step;
    bra             LOOP;
DONE:
    ret;
}
"""

_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class SharedMemoryFiller:
    """Loads the fill kernel once; fill() runs it on the current stream and waits for it."""

    def __init__(self):
        self.error = None
        if os.environ.get("CUDA_AGENT_SMEM_FILL") != "1":
            self.error = "the fill kernel is opt-in ($CUDA_AGENT_SMEM_FILL=1)"
            return
        try:
            self._load()
        except Exception as exc:  # noqa: BLE001 - any failure means: fall back to the softmax
            self.error = f"{type(exc).__name__}: {exc}"

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"{what} failed with CUDA driver error {code}")

    def _load(self) -> None:
        torch.cuda.init()
        cu = ctypes.CDLL("libcuda.so.1")
        self.cu = cu
        module = ctypes.c_void_p()
        self._check(cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX.encode() + b"\0")),
                    "cuModuleLoadData")
        self.function = ctypes.c_void_p()
        self._check(cu.cuModuleGetFunction(ctypes.byref(self.function), module, b"cuda_agent_fill_shared"),
                    "cuModuleGetFunction")
        device = ctypes.c_int()
        self._check(cu.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        sms, smem = ctypes.c_int(), ctypes.c_int()
        self._check(cu.cuDeviceGetAttribute(ctypes.byref(sms), _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                            device), "cuDeviceGetAttribute(SMs)")
        self._check(cu.cuDeviceGetAttribute(ctypes.byref(smem), _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                            device), "cuDeviceGetAttribute(shared memory)")
        self.sms, self.smem_bytes = sms.value, smem.value
        self._check(cu.cuFuncSetAttribute(self.function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          ctypes.c_int(self.smem_bytes)), "cuFuncSetAttribute")

    def fill(self) -> str:
        """Fills shared memory; returns how ("kernel" or "softmax")."""
        if self.error is None:
            words = ctypes.c_uint32(self.smem_bytes // 4)
            value = ctypes.c_uint32(FILL_BITS)
            params = (ctypes.c_void_p * 2)(ctypes.addressof(words), ctypes.addressof(value))
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            code = self.cu.cuLaunchKernel(self.function, ctypes.c_uint(2 * self.sms), 1, 1,
                                          ctypes.c_uint(BLOCK_THREADS), 1, 1, ctypes.c_uint(self.smem_bytes),
                                          stream, params, None)
            torch.cuda.synchronize()
            if code == 0:
                return "kernel"
            self.error = f"cuLaunchKernel failed with CUDA driver error {code}"
        torch.softmax(torch.randn(4096, 4096, device="cuda"), dim=1).sum()
        torch.cuda.synchronize()
        return "softmax"
