//===- ModelLibraryTest.cpp - Tests of the model.so loader ------*- C++ -*-===//
//
// Loads the fixture model libraries built by this directory's CMakeLists.txt
// (fixtures/FixtureModel.c compiled with different definitions). The good
// fixture is opened, its manifest checked and its entry points called through
// the resolved pointers; every broken fixture must be refused with a one-line
// LoadError that names the file and the problem.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/ModelLibrary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <type_traits>
#include <vector>

#include <unistd.h>

using namespace fp::rt;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

static_assert(std::is_base_of_v<std::runtime_error, LoadError>);
static_assert(std::is_nothrow_move_constructible_v<ModelLibrary>);
static_assert(!std::is_copy_constructible_v<ModelLibrary>);
static_assert(!std::is_copy_assignable_v<ModelLibrary>);

/// The message ModelLibrary::open() throws for `path`; fails the test when
/// the library loads.
std::string openError(const std::string &path) {
  try {
    ModelLibrary::open(path);
  } catch (const LoadError &error) {
    std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos)
        << "not one line: " << message;
    return message;
  }
  ADD_FAILURE() << "ModelLibrary::open accepted '" << path << "'";
  return {};
}

std::string quoted(const std::string &path) { return "'" + path + "'"; }

//===----------------------------------------------------------------------===//
// The good fixture
//===----------------------------------------------------------------------===//

TEST(ModelLibraryTest, OpensGoodLibrary) {
  ModelLibrary library = ModelLibrary::open(FP_FIXTURE_GOOD);
  EXPECT_EQ(library.path(), FP_FIXTURE_GOOD);

  const Manifest &manifest = library.manifest();
  EXPECT_EQ(manifest.abiVersion, FP_MODEL_ABI_VERSION);
  EXPECT_EQ(manifest.generator, "hand-written test fixture");
  EXPECT_THAT(manifest.targets, ElementsAre(FP_TARGET_CPU));
  EXPECT_THAT(manifest.dtypes, ElementsAre(FP_DTYPE_F32, FP_DTYPE_F64));
  ASSERT_EQ(manifest.layers.size(), 1u);
  const LayerInfo &layer = manifest.layers[0];
  EXPECT_EQ(layer.name, "scale");
  EXPECT_EQ(layer.dModel, 4);
  EXPECT_EQ(layer.entryPoints.forward, "fixture_scale_forward");
  ASSERT_EQ(layer.params.size(), 1u);
  EXPECT_EQ(layer.params[0].name, "gain");
  EXPECT_THAT(layer.params[0].shape, ElementsAre(4));
  EXPECT_EQ(layer.params[0].init.kind, "ones");
  EXPECT_FALSE(layer.params[0].weightDecay);
  ASSERT_TRUE(layer.solver.has_value());
  EXPECT_EQ(layer.solver->maxIterEval, 1000);
  ASSERT_TRUE(manifest.model.has_value());
  EXPECT_EQ(manifest.model->vocab, 11);
  EXPECT_THAT(manifest.model->stack, ElementsAre("scale", "scale"));

  ASSERT_EQ(library.numLayers(), 1u);
  const LayerEntryPoints &entryPoints = library.entryPoints(0);
  EXPECT_NE(entryPoints.bufferSizes, nullptr);
  EXPECT_NE(entryPoints.forward, nullptr);
  EXPECT_NE(entryPoints.backward, nullptr);
  EXPECT_EQ(&library.entryPoints("scale"), &entryPoints);
  EXPECT_THROW(library.entryPoints(1), std::out_of_range);
  EXPECT_THROW(library.entryPoints("lstm"), std::out_of_range);
  EXPECT_EQ(library.lastError(), "");
}

TEST(ModelLibraryTest, ReportsBufferSizes) {
  ModelLibrary library = ModelLibrary::open(FP_FIXTURE_GOOD);
  fp_buffer_sizes sizes{};
  ASSERT_EQ(library.entryPoints(0).bufferSizes(FP_TARGET_CPU, FP_DTYPE_F64,
                                               /*batch=*/2, /*seq_len=*/3,
                                               &sizes),
            FP_OK);
  EXPECT_EQ(sizes.forward_workspace_bytes, 4 * sizeof(double));
  EXPECT_EQ(sizes.saved_bytes, 2 * 3 * 4 * sizeof(double));
  EXPECT_EQ(sizes.backward_workspace_bytes, 0u);
}

/// Calls the good fixture's forward and backward on a 2 x 3 x 4 batch.
template <typename T> void checkForwardAndBackward(fp_dtype dtype) {
  ModelLibrary library = ModelLibrary::open(FP_FIXTURE_GOOD);
  const LayerEntryPoints &layer = library.entryPoints("scale");
  constexpr int64_t batch = 2, seqLen = 3, width = 4;
  constexpr size_t numElements = batch * seqLen * width;

  std::vector<T> gain = {1, -2, 0.5, 3};
  std::vector<T> input(numElements), output(numElements, -1);
  std::vector<T> saved(numElements);
  for (size_t i = 0; i != numElements; ++i)
    input[i] = static_cast<T>(i) - 5;
  const void *params[] = {gain.data()};
  std::vector<int32_t> iterations(batch, 0);
  fp_solver_stats stats{};
  stats.iterations = iterations.data();

  fp_forward_args forward{};
  forward.struct_size = sizeof(fp_forward_args);
  forward.target = FP_TARGET_CPU;
  forward.dtype = dtype;
  forward.batch = batch;
  forward.seq_len = seqLen;
  forward.num_params = 1;
  forward.params = params;
  forward.input = input.data();
  forward.output = output.data();
  forward.saved = saved.data();
  forward.stats = &stats;
  ASSERT_EQ(layer.forward(&forward), FP_OK) << library.lastError();
  for (size_t i = 0; i != numElements; ++i)
    EXPECT_EQ(output[i], input[i] * gain[i % width]) << "element " << i;
  EXPECT_THAT(iterations, ElementsAre(1, 1));
  EXPECT_EQ(stats.steps, 1);

  std::vector<T> gradOutput(numElements, 1), gradInput(numElements);
  std::vector<T> gradGain = {10, 10, 10, 10};
  void *gradParams[] = {gradGain.data()};
  fp_backward_args backward{};
  backward.struct_size = sizeof(fp_backward_args);
  backward.target = FP_TARGET_CPU;
  backward.dtype = dtype;
  backward.batch = batch;
  backward.seq_len = seqLen;
  backward.num_params = 1;
  backward.params = params;
  backward.input = input.data();
  backward.saved = saved.data();
  backward.grad_output = gradOutput.data();
  backward.grad_input = gradInput.data();
  backward.grad_params = gradParams;
  ASSERT_EQ(layer.backward(&backward), FP_OK) << library.lastError();
  for (size_t i = 0; i != numElements; ++i)
    EXPECT_EQ(gradInput[i], gain[i % width]) << "element " << i;
  // Parameter gradients accumulate: 10 + sum over tokens of input[., c].
  std::vector<T> expected(width, 10);
  for (size_t i = 0; i != numElements; ++i)
    expected[i % width] += input[i];
  EXPECT_THAT(gradGain, ElementsAreArray(expected));
}

TEST(ModelLibraryTest, CallsEntryPointsInF32) {
  checkForwardAndBackward<float>(FP_DTYPE_F32);
}

TEST(ModelLibraryTest, CallsEntryPointsInF64) {
  checkForwardAndBackward<double>(FP_DTYPE_F64);
}

TEST(ModelLibraryTest, LastErrorExplainsAFailedCall) {
  ModelLibrary library = ModelLibrary::open(FP_FIXTURE_GOOD);
  const LayerEntryPoints &layer = library.entryPoints(0);
  fp_buffer_sizes sizes{};

  EXPECT_EQ(layer.bufferSizes(FP_TARGET_CUDA, FP_DTYPE_F32, 1, 1, &sizes),
            FP_ERROR_UNSUPPORTED);
  EXPECT_THAT(library.lastError(), HasSubstr("not compiled for target"));

  // A successful call clears the message.
  EXPECT_EQ(layer.bufferSizes(FP_TARGET_CPU, FP_DTYPE_F32, 1, 1, &sizes),
            FP_OK);
  EXPECT_EQ(library.lastError(), "");

  // The library checks struct_size, the ABI's guard against layout skew.
  fp_forward_args forward{};
  forward.struct_size = sizeof(fp_forward_args) - 8;
  EXPECT_EQ(layer.forward(&forward), FP_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(library.lastError(), HasSubstr("struct_size"));
}

TEST(ModelLibraryTest, MovesOwnership) {
  ModelLibrary first = ModelLibrary::open(FP_FIXTURE_GOOD);
  fp_forward_fn forward = first.entryPoints(0).forward;

  ModelLibrary second(std::move(first));
  EXPECT_EQ(first.numLayers(), 0u); // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(second.entryPoints(0).forward, forward);
  EXPECT_EQ(second.path(), FP_FIXTURE_GOOD);

  // Assigning over a library closes the old one and takes the new one.
  ModelLibrary third = ModelLibrary::open(FP_FIXTURE_GOOD);
  third = std::move(second);
  EXPECT_EQ(third.entryPoints("scale").forward, forward);
  EXPECT_EQ(third.manifest().layers[0].name, "scale");
}

TEST(ModelLibraryTest, OpensBareFileNameRelativeToWorkingDirectory) {
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(::chdir(FP_FIXTURE_DIR), 0);
  bool opened = false;
  std::string message;
  try {
    ModelLibrary library = ModelLibrary::open("good_model.so");
    opened = library.numLayers() == 1;
  } catch (const LoadError &error) {
    message = error.what();
  }
  ASSERT_EQ(::chdir(previous), 0);
  EXPECT_TRUE(opened) << message;
}

//===----------------------------------------------------------------------===//
// Refused libraries
//===----------------------------------------------------------------------===//

TEST(ModelLibraryTest, RefusesMissingFile) {
  EXPECT_THAT(openError(FP_FIXTURE_MISSING),
              HasSubstr("cannot load model library " +
                        quoted(FP_FIXTURE_MISSING) + ": no such file"));
}

TEST(ModelLibraryTest, RefusesDirectory) {
  EXPECT_THAT(
      openError(FP_FIXTURE_DIR),
      AllOf(HasSubstr(quoted(FP_FIXTURE_DIR)), HasSubstr("is a directory")));
}

TEST(ModelLibraryTest, RefusesTextFile) {
  EXPECT_THAT(openError(FP_FIXTURE_NOT_A_LIBRARY),
              AllOf(HasSubstr(quoted(FP_FIXTURE_NOT_A_LIBRARY) +
                              " is not a loadable shared library: "),
                    HasSubstr("built by fpc"),
                    // The loader's reason does not repeat the path.
                    Not(HasSubstr(": " + std::string(FP_FIXTURE_NOT_A_LIBRARY) +
                                  ": "))));
}

// A library cut short (an interrupted copy, a full disk) would fault with
// SIGBUS inside dlopen() or at its first call; it is refused with a message
// at every length that keeps the ELF magic.
TEST(ModelLibraryTest, RefusesTruncatedLibrary) {
  std::ifstream good(FP_FIXTURE_GOOD, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(good)),
                    std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  char model[] = "/tmp/fp-truncated-XXXXXX";
  int fd = ::mkstemp(model);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const std::string path = model;
  for (size_t length : {bytes.size() - 1, bytes.size() * 3 / 4,
                        bytes.size() / 2, size_t(4096), size_t(100)}) {
    SCOPED_TRACE("cut to " + std::to_string(length) + " bytes");
    {
      std::ofstream cut(path, std::ios::binary | std::ios::trunc);
      cut.write(bytes.data(), static_cast<std::streamsize>(length));
    }
    EXPECT_THAT(openError(path),
                AllOf(HasSubstr(quoted(path) + ": it is truncated or damaged"),
                      HasSubstr("rebuild it with fpc")));
  }
  ::unlink(path.c_str());
}

TEST(ModelLibraryTest, RefusesLibraryWithoutAbiSymbol) {
  EXPECT_THAT(openError(FP_FIXTURE_NO_ABI_SYMBOL),
              HasSubstr(quoted(FP_FIXTURE_NO_ABI_SYMBOL) +
                        " is not an fpc model library (no symbol "
                        "'fp_model_abi_version')"));
}

TEST(ModelLibraryTest, RefusesWrongAbiVersion) {
  EXPECT_THAT(openError(FP_FIXTURE_WRONG_ABI),
              AllOf(HasSubstr(quoted(FP_FIXTURE_WRONG_ABI) +
                              " was built for model ABI version 99, but this "
                              "runtime speaks version 6"),
                    HasSubstr("recompile it with a matching fpc")));
}

TEST(ModelLibraryTest, RefusesMalformedManifest) {
  EXPECT_THAT(openError(FP_FIXTURE_MALFORMED_MANIFEST),
              HasSubstr(quoted(FP_FIXTURE_MALFORMED_MANIFEST) +
                        " has an invalid manifest: malformed JSON"));
}

TEST(ModelLibraryTest, RefusesManifestDisagreeingWithAbiSymbol) {
  EXPECT_THAT(openError(FP_FIXTURE_MANIFEST_ABI_MISMATCH),
              HasSubstr(quoted(FP_FIXTURE_MANIFEST_ABI_MISMATCH) +
                        " has an invalid manifest: field 'abi_version' is 7, "
                        "but fp_model_abi_version() returns 6"));
}

TEST(ModelLibraryTest, RefusesLibraryWithoutManifestChecksum) {
  EXPECT_THAT(openError(FP_FIXTURE_NO_CHECKSUM),
              HasSubstr(quoted(FP_FIXTURE_NO_CHECKSUM) +
                        " lacks symbol 'fp_model_manifest_checksum'"));
}

TEST(ModelLibraryTest, RefusesEditedManifest) {
  // The manifest does not match the checksum compiled beside it: its shapes
  // and sizes are not the ones the code was compiled for.
  EXPECT_THAT(openError(FP_FIXTURE_EDITED_MANIFEST),
              AllOf(HasSubstr(quoted(FP_FIXTURE_EDITED_MANIFEST) +
                              " has an invalid manifest: it does not match "
                              "the checksum compiled with it"),
                    HasSubstr("recompile it with fpc")));
}

TEST(ModelLibraryTest, RefusesLibraryWithoutLastError) {
  EXPECT_THAT(openError(FP_FIXTURE_NO_LAST_ERROR),
              HasSubstr(quoted(FP_FIXTURE_NO_LAST_ERROR) +
                        " lacks symbol 'fp_model_last_error' required by "
                        "model ABI version 6"));
}

TEST(ModelLibraryTest, RefusesMissingEntryPoint) {
  EXPECT_THAT(openError(FP_FIXTURE_MISSING_ENTRY_POINT),
              HasSubstr(quoted(FP_FIXTURE_MISSING_ENTRY_POINT) +
                        " lacks entry point 'fixture_scale_backward' (layer "
                        "'scale', backward) named in its manifest"));
}

} // namespace
