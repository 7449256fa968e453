//===- DeviceCounters.cpp - CUPTI activity and callback counts --*- C++ -*-===//
//
// Kernels, copies and fills come from CUPTI's activity records (what the
// device ran, with each kernel's start and end on the device); blocking
// calls from runtime API callbacks on entry.
//
//===----------------------------------------------------------------------===//

#include "DeviceCounters.h"

#if FP_HAVE_CUPTI

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cxxabi.h>
#include <map>
#include <mutex>
#include <new>

namespace fp::bench {
namespace {

constexpr size_t kBufferBytes = size_t(8) << 20;
constexpr size_t kBufferAlignment = 8;

std::atomic<int64_t> kernels{0}, copies{0}, syncs{0};
std::atomic<bool> counting{false};

// The newest kernel record of the CUPTI compiled against (CUPTI returns
// the version its header asks for).
#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;
#endif

std::mutex timesMutex;
std::map<std::string, KernelTime> times; // by mangled name

/// `mangled` demangled, without the return type and parameter list:
/// "fp::cuda::detail::sampleKernel<float, fp_mamba_k0>".
std::string kernelName(const char *mangled) {
  if (!mangled)
    return "(unnamed)";
  int status = 0;
  char *demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  if (name.rfind("void ", 0) == 0)
    name.erase(0, 5);
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
      if (depth == 0) {
        name.resize(i);
        break;
      }
    }
  }
  return name;
}

std::string resultText(CUptiResult result) {
  const char *text = nullptr;
  cuptiGetResultString(result, &text);
  return text ? text : "CUPTI error " + std::to_string(int(result));
}

void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size,
                              size_t *maxNumRecords) {
  *buffer = static_cast<uint8_t *>(
      ::operator new(kBufferBytes, std::align_val_t(kBufferAlignment)));
  *size = kBufferBytes;
  *maxNumRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t,
                              size_t validSize) {
  CUpti_Activity *record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) ==
         CUPTI_SUCCESS) {
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      ++kernels;
      const auto *kernel = reinterpret_cast<const KernelRecord *>(record);
      std::lock_guard<std::mutex> lock(timesMutex);
      KernelTime &time = times[kernel->name ? kernel->name : ""];
      if (time.launches++ == 0)
        time.name = kernelName(kernel->name);
      time.ms += double(kernel->end - kernel->start) * 1e-6;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMSET:
      ++copies;
      break;
    default:
      break;
    }
  }
  ::operator delete(buffer, std::align_val_t(kBufferAlignment));
}

/// The runtime calls that block the host until the device catches up.
constexpr CUpti_CallbackId kBlockingCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
};

void CUPTIAPI onRuntimeCall(void *, CUpti_CallbackDomain, CUpti_CallbackId,
                            const void *data) {
  const auto *info = static_cast<const CUpti_CallbackData *>(data);
  if (counting.load() && info->callbackSite == CUPTI_API_ENTER)
    ++syncs;
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

class CuptiCounter final : public DeviceCounter {
public:
  explicit CuptiCounter(CUpti_SubscriberHandle subscriber)
      : subscriber(subscriber) {}
  ~CuptiCounter() override { cuptiUnsubscribe(subscriber); }

  void begin() override {
    cudaDeviceSynchronize();
    cuptiActivityFlushAll(1);
    kernels = copies = syncs = 0;
    {
      std::lock_guard<std::mutex> lock(timesMutex);
      times.clear();
    }
    for (CUpti_ActivityKind kind : kKinds)
      cuptiActivityEnable(kind);
    counting = true;
  }

  DeviceCounts end() override {
    counting = false;
    cudaDeviceSynchronize();
    cuptiActivityFlushAll(1);
    for (CUpti_ActivityKind kind : kKinds)
      cuptiActivityDisable(kind);
    DeviceCounts counts{kernels.load(), copies.load(), syncs.load(), {}};
    std::lock_guard<std::mutex> lock(timesMutex);
    for (auto &entry : times)
      counts.kernelTimes.push_back(std::move(entry.second));
    std::sort(
        counts.kernelTimes.begin(), counts.kernelTimes.end(),
        [](const KernelTime &a, const KernelTime &b) { return a.ms > b.ms; });
    return counts;
  }

private:
  CUpti_SubscriberHandle subscriber;
};

} // namespace

std::unique_ptr<DeviceCounter> DeviceCounter::create(std::string &why) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();
    why = "no CUDA device";
    return nullptr;
  }
  if (CUptiResult r =
          cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted);
      r != CUPTI_SUCCESS) {
    why = "CUPTI: " + resultText(r);
    return nullptr;
  }
  CUpti_SubscriberHandle subscriber = nullptr;
  if (CUptiResult r = cuptiSubscribe(
          &subscriber, reinterpret_cast<CUpti_CallbackFunc>(onRuntimeCall),
          nullptr);
      r != CUPTI_SUCCESS) {
    why = "CUPTI: " + resultText(r);
    return nullptr;
  }
  for (CUpti_CallbackId id : kBlockingCalls)
    if (CUptiResult r =
            cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
        r != CUPTI_SUCCESS) {
      cuptiUnsubscribe(subscriber);
      why = "CUPTI: " + resultText(r);
      return nullptr;
    }
  return std::make_unique<CuptiCounter>(subscriber);
}

} // namespace fp::bench

#else // !FP_HAVE_CUPTI

namespace fp::bench {

std::unique_ptr<DeviceCounter> DeviceCounter::create(std::string &why) {
  why = "fp-bench was built without CUPTI";
  return nullptr;
}

} // namespace fp::bench

#endif
