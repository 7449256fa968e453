//===- HostMemory.h - How the host allocator behaves ------------*- C++ -*-===//
//
// LibTorch allocates CPU tensors with the C library's malloc. glibc serves a
// large allocation with a fresh mmap and returns it to the kernel when freed,
// so every call of a layer that allocates a few MiB of temporaries touches
// fresh pages and pays a page fault for each: on a virtual machine this can
// cost more than the arithmetic (an eager FP-Mamba layer at B = 64, T = 17,
// D = 128 ran 11x slower). On CUDA, LibTorch's caching allocator and the
// device's stream-ordered pool keep freed memory for the next allocation;
// keepFreedHostMemory() makes glibc do the same on the host.
//
//===----------------------------------------------------------------------===//

#ifndef FP_RUNTIME_HOSTMEMORY_H
#define FP_RUNTIME_HOSTMEMORY_H

namespace fp::rt {

/// Makes the C library keep freed memory for later allocations instead of
/// returning it to the kernel: with glibc, no allocation is served by its own
/// mmap and the heap is never trimmed. Returns false where the C library
/// offers no such control (not glibc) or refused it. Call it once, early,
/// before the allocations it should affect.
bool keepFreedHostMemory();

} // namespace fp::rt

#endif // FP_RUNTIME_HOSTMEMORY_H
