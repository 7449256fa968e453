# Use ccache for C, C++ and CUDA when it is installed.
find_program(FP_CCACHE_PROGRAM ccache)
if(FP_CCACHE_PROGRAM)
  foreach(lang C CXX CUDA)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER "${FP_CCACHE_PROGRAM}")
    endif()
  endforeach()
endif()
