//===- HostMemory.cpp - How the host allocator behaves ----------*- C++ -*-===//
//
// keepFreedHostMemory() through glibc's mallopt.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/HostMemory.h"

// Any C library header defines __GLIBC__ where the library is glibc.
#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

bool fp::rt::keepFreedHostMemory() {
#if defined(__GLIBC__)
  // No allocation gets its own mapping, and freed memory at the top of the
  // heap is never handed back.
  return mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
#else
  return false;
#endif
}
