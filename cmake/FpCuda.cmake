# Detect the CUDA toolkit. Sets FP_CUDA_ENABLED (ON/OFF) and FP_NVCC.
# FP_ENABLE_CUDA=AUTO enables CUDA when nvcc is found (on PATH or at
# /usr/local/cuda/bin/nvcc); ON makes a missing nvcc an error.
set(FP_CUDA_ENABLED OFF)
if(NOT FP_ENABLE_CUDA STREQUAL "OFF")
  find_program(FP_NVCC nvcc HINTS /usr/local/cuda/bin)
  if(FP_NVCC)
    set(FP_CUDA_ENABLED ON)
  elseif(FP_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FP_ENABLE_CUDA=ON but nvcc was not found "
                        "(looked on PATH and in /usr/local/cuda/bin)")
  endif()
endif()
