# MLIR/LLVM setup for the compiler subtree, after the standalone template.
# Pinned to one major version: the install script and this file both name it.
set(FP_LLVM_MAJOR 22)
find_package(MLIR REQUIRED CONFIG
             HINTS /usr/lib/llvm-${FP_LLVM_MAJOR}/lib/cmake/mlir)
if(NOT LLVM_VERSION_MAJOR EQUAL FP_LLVM_MAJOR)
  message(FATAL_ERROR "fpc needs LLVM/MLIR ${FP_LLVM_MAJOR}, found "
                      "${LLVM_PACKAGE_VERSION} (${MLIR_DIR})")
endif()
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")

set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)
include(HandleLLVMOptions)

set(LLVM_LIT_ARGS "-sv" CACHE STRING "lit arguments")

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
link_directories(${LLVM_BUILD_LIBRARY_DIR})
separate_arguments(FP_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${FP_LLVM_DEFINITIONS})

# Tools used by the lit suite.
find_program(FP_LIT lit HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
# add_lit_testsuite (check-fp-lit) runs LLVM_EXTERNAL_LIT, else
# <build>/bin/llvm-lit, which an installed LLVM does not provide.
set(LLVM_EXTERNAL_LIT "${FP_LIT}" CACHE FILEPATH "lit, for check-fp" FORCE)
find_program(FP_FILECHECK FileCheck HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
