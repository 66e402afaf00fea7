"""Fills every SM's shared memory with a known bad value, for the candidate job's repeated check.

Shared memory is not cleared between kernels: a kernel that reads slots it never wrote (HACKS B12)
computes with whatever an earlier kernel left there, and passes while that happens to be harmless.
Before the repeat of check 0 the judge writes 3.0e38 into all of it:
a kernel of our own (PTX, loaded through the CUDA driver API that torch already initialised). Where a
block's shared memory lies in the SM's unified L1/shared array depends on the carveout the launch
runs under, so the kernel runs once per carveout size the GPU has (8 KB … the SM's whole shared
memory), each time with blocks asking for all of it, twice as many as there are SMs; a max-reduction that
reads such a slot returns 3.0e38 and a sum overflows, so the repeat fails for sure. Where the kernel
cannot be loaded or launched, a row softmax over random data scribbles instead (what it leaves is luck)
and the result says why (`shared_memory_fill_note`).
"""

from __future__ import annotations

import ctypes
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
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
# Shared-memory carveouts of sm_80/sm_90 (KiB); those above the SM's size are dropped.
CARVEOUTS_KIB = (8, 16, 32, 64, 100, 132, 164, 196, 228)


class SharedMemoryFiller:
    """Loads the fill kernel once; fill() runs it on the current stream and waits for it."""

    def __init__(self) -> None:
        self.error = None
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
        attrs = {}
        for name, attr in (("sms", _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                           ("per_sm", _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
                           ("per_block", _CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                           ("reserved", _CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)):
            value = ctypes.c_int()
            self._check(cu.cuDeviceGetAttribute(ctypes.byref(value), attr, device), f"cuDeviceGetAttribute({name})")
            attrs[name] = value.value
        self.sms, self.smem_bytes = attrs["sms"], attrs["per_block"]
        # (carveout percent, dynamic shared bytes) per carveout: a block then takes all of it.
        self.launches = []
        for kib in CARVEOUTS_KIB:
            if kib * 1024 > attrs["per_sm"]:
                break
            nbytes = min(kib * 1024 - attrs["reserved"], attrs["per_block"])
            percent = min(100, -(-kib * 1024 * 100 // attrs["per_sm"]))
            self.launches.append((percent, nbytes - nbytes % 16))
        self._check(cu.cuFuncSetAttribute(self.function, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          ctypes.c_int(self.smem_bytes)), "cuFuncSetAttribute")

    def _launch(self, percent: int, nbytes: int) -> int:
        code = self.cu.cuFuncSetAttribute(self.function, _CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                          ctypes.c_int(percent))
        if code != 0:
            return int(code)
        words = ctypes.c_uint32(nbytes // 4)
        value = ctypes.c_uint32(FILL_BITS)
        params = (ctypes.c_void_p * 2)(ctypes.addressof(words), ctypes.addressof(value))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        return int(self.cu.cuLaunchKernel(self.function, ctypes.c_uint(2 * self.sms), 1, 1,
                                          ctypes.c_uint(BLOCK_THREADS), 1, 1, ctypes.c_uint(nbytes),
                                          stream, params, None))

    def fill(self) -> str:
        """Fills shared memory under every carveout; returns how ("kernel" or "softmax")."""
        if self.error is None:
            for percent, nbytes in self.launches:
                code = self._launch(percent, nbytes)
                if code != 0:
                    self.error = (f"the fill kernel failed with CUDA driver error {code} "
                                  f"(carveout {percent}%, {nbytes} bytes)")
                    break
            torch.cuda.synchronize()
            if self.error is None:
                return "kernel"
        torch.softmax(torch.randn(4096, 4096, device="cuda"), dim=1).sum()
        torch.cuda.synchronize()
        return "softmax"
