//===- StreamingTest.cpp - Chunked sequences against whole ones -*- C++ -*-===//
//
// A fixed point at token t depends on tokens ≤ t only, so a sequence run in
// chunks that carry each layer's state (BlockMixer::forwardChunk: the scan
// state, the last output row, the convolution tails) solves the equations of
// the whole sequence. For the reference layer of every models/*.fp (the
// ReferenceImport table), at D = 8 in f64, in evaluation mode, solved to a
// relative residual of 1e-12 (the cap high enough never to bind), split
// into one token per chunk (the sequential solver), the whole sequence as one
// chunk, and two random splits into chunks of 1 to 5 tokens:
//
// * every chunk's solution, put together, is a fixed point of the whole
//   sequence's map: relative residual ≤ 1e-10;
// * Mamba and the FP-RNN models give the whole sequence's output within
//   1e-10 relative, and so does every model with the whole sequence as one
//   chunk.
//
// The FP-Mamba maps at these random weights have several fixed points per
// token (the LayerNorm inside the map makes y = LN(A y + b) an
// eigenvector-like problem): the sequential solver, started from zero at each
// token, may reach another one than the whole sequence's solve, which starts
// from zero at every token at once; the log states the difference
// (docs/streaming.md). A map whose whole-sequence solve cannot reach 1e-12
// from zero at these weights (its step size decays first) is reported as
// skipped with the residual it reached. The log also states the difference
// at each model's own tolerance in f32, for docs/streaming.md.
//
//===----------------------------------------------------------------------===//

#include "TestSeed.h"
#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/Reference/LanguageModel.h"
#include "fp/Runtime/Reference/Layers.h"
#include "fp/Runtime/ReferenceImport.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <random>
#include <stdexcept>

using namespace fp::rt;

namespace {

constexpr double kTolerance = 1e-12;
constexpr double kBound = 1e-10;

/// The table's configuration of `name` at D = 8 in f64, solved to
/// kTolerance without a binding cap.
ModelConfig convergedConfig(const std::string &name) {
  ModelConfig config;
  for (const ReferenceModel &model : referenceModels())
    if (model.name == name)
      config = referenceAtWidth(model.config, 8);
  config.dtype = torch::kFloat64;
  config.solver.tolerance = kTolerance;
  config.solver.maxIterEval = 100000;
  return config;
}

/// Lengths of a random split of `length` tokens into chunks of 1..5.
std::vector<int64_t> randomSplit(int64_t length, std::mt19937_64 &rng) {
  std::vector<int64_t> sizes;
  std::uniform_int_distribution<int64_t> size(1, 5);
  for (int64_t used = 0; used < length;) {
    int64_t next = std::min(size(rng), length - used);
    sizes.push_back(next);
    used += next;
  }
  return sizes;
}

struct ChunkedRun {
  torch::Tensor output;
  /// The chunks' ŷ put together (fixed-point layers).
  torch::Tensor solution;
  /// The largest best residual of any chunk's solve (0 without a solver).
  double worstResidual = 0;
  /// Iterations per chunk, mean over the batch.
  std::vector<double> iterations;
};

ChunkedRun runInChunks(ref::BlockMixer &layer, const torch::Tensor &u,
                       const std::vector<int64_t> &sizes) {
  ChunkedRun run;
  ref::ChunkState state;
  std::vector<torch::Tensor> outputs, solutions;
  int64_t begin = 0;
  for (int64_t size : sizes) {
    outputs.push_back(layer.forwardChunk(u.narrow(1, begin, size), state));
    begin += size;
    if (layer.lastIterations.defined()) {
      if (layer.lastSolution.defined()) // not kept by a compiled layer
        solutions.push_back(layer.lastSolution);
      run.worstResidual =
          std::max(run.worstResidual, layer.lastResiduals.max().item<double>());
      run.iterations.push_back(
          layer.lastIterations.to(torch::kDouble).mean().item<double>());
    }
  }
  run.output = torch::cat(outputs, 1);
  if (!solutions.empty())
    run.solution = torch::cat(solutions, 1);
  return run;
}

/// The relative residual of `y` under the whole sequence's map of `layer`
/// on input `u`.
double wholeSequenceResidual(ref::BlockMixer &layer, const torch::Tensor &u,
                             const torch::Tensor &y) {
  return ref::relativeResidual(y, layer.applyMapOnce(u, y))
      .max()
      .item<double>();
}

double relativeDifference(const torch::Tensor &a, const torch::Tensor &b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

/// Whether the maps of `kind` have one fixed point at the test's weights
/// (not FP-Mamba's or FP-Mamba2's, whose outputs are normalised).
bool hasUniqueFixedPoint(const std::string &kind) {
  return kind != "fp_mamba" && kind != "fp_mamba2";
}

class Streaming : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> modelNames() {
  std::vector<std::string> names;
  for (const ReferenceModel &model : referenceModels())
    names.push_back(model.name);
  return names;
}

} // namespace

TEST_P(Streaming, ChunksSolveTheWholeSequencesEquations) {
  const uint64_t seed = fp::test::testSeed();
  torch::manual_seed(seed);
  ModelConfig config = convergedConfig(GetParam());
  std::shared_ptr<ref::BlockMixer> layer = ref::makeBlockMixer(config);
  layer->eval();
  torch::NoGradGuard noGrad;
  const int64_t length = 11;
  torch::Tensor u = torch::randn({2, length, config.dModel},
                                 torch::TensorOptions().dtype(torch::kFloat64));
  torch::Tensor whole = layer->forward(u);
  const bool fixedPoint = layer->lastIterations.defined();
  if (fixedPoint) {
    const double reached = layer->lastResiduals.max().item<double>();
    if (reached > kTolerance)
      GTEST_SKIP() << fmt::format(
          "{}: the whole sequence's solve stops at a relative residual of "
          "{:.1e} at these weights, above {:.0e}",
          GetParam(), reached, kTolerance);
  }
  // Maps whose fixed point is unique here: their chunks give the whole
  // sequence's output. FP-Mamba's and FP-Mamba2's normalised maps can have
  // several; their chunks' solution is then checked to be one of the whole
  // sequence's (below).
  const bool unique = hasUniqueFixedPoint(config.kind);

  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> splits = {std::vector<int64_t>(length, 1),
                                              {length},
                                              randomSplit(length, rng),
                                              randomSplit(length, rng)};
  for (const std::vector<int64_t> &sizes : splits) {
    SCOPED_TRACE(fmt::format("chunks {}", fmt::join(sizes, " ")));
    ChunkedRun run = runInChunks(*layer, u, sizes);
    const double difference = relativeDifference(run.output, whole);
    if (unique || sizes.size() == 1) {
      EXPECT_LE(difference, kBound);
    }
    if (!fixedPoint)
      continue;
    // A chunk whose solve cannot reach the tolerance either (its step size
    // decays first) holds no fixed point to check.
    if (run.worstResidual > kTolerance) {
      std::cout << fmt::format(
          "[ stream   ] {}: chunks {}: a chunk's solve stops at a relative "
          "residual of {:.1e}; not compared\n",
          GetParam(), fmt::join(sizes, " "), run.worstResidual);
      continue;
    }
    EXPECT_LE(wholeSequenceResidual(*layer, u, run.solution), kBound);
    if (sizes.size() == size_t(length))
      std::cout << fmt::format(
          "[ stream   ] {}: one token per chunk differs from the whole "
          "sequence by {:.1e} relative; iterations per token {:.0f}\n",
          GetParam(), difference, fmt::join(run.iterations, " "));
  }

  // At the model's own tolerance (FP-Mamba's 0.1, FP-RNN's), in f32, one
  // token per chunk: the difference the stop rule allows, for the docs.
  if (!fixedPoint)
    return;
  ModelConfig own = config;
  own.solver = ref::referenceSolverConfig(config.kind);
  own.dtype = torch::kFloat32;
  torch::manual_seed(seed);
  std::shared_ptr<ref::BlockMixer> ownLayer = ref::makeBlockMixer(own);
  ownLayer->eval();
  torch::Tensor ownInput = u.to(torch::kFloat32);
  torch::Tensor ownWhole = ownLayer->forward(ownInput);
  ChunkedRun ownRun =
      runInChunks(*ownLayer, ownInput, std::vector<int64_t>(length, 1));
  std::cout << fmt::format(
      "[ stream   ] {} at tolerance {} (f32): one token per chunk differs "
      "from the whole sequence by {:.1e} relative\n",
      GetParam(), own.solver.tolerance,
      relativeDifference(ownRun.output, ownWhole));
}

TEST_P(Streaming, CompiledChunksMatchTheReferencesChunks) {
  const std::string directory = FP_TEST_STREAM_MODELS_DIR;
  if (directory.empty())
    GTEST_SKIP() << "the compiler is not part of this build: no library";
  const std::string path = directory + "/" + GetParam() + ".so";
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing; build the target FpTestStreamModels";
  std::shared_ptr<const ModelLibrary> library = loadModelLibrary(path);
  const Manifest &manifest = library->manifest();
  const LayerInfo &info = referenceLayerOf(manifest);
  ASSERT_TRUE(info.hasChunkedForward()) << path << " has no chunked forward";
  const uint64_t seed = fp::test::testSeed();
  const int64_t length = 11;

  for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
    const bool f64 = dtype == torch::kFloat64;
    const double tolerance = f64 ? kTolerance : 1e-6;
    const double bound = f64 ? kBound : 1e-5;
    const std::string what =
        fmt::format("{} (compiled, {})", GetParam(), f64 ? "f64" : "f32");
    SCOPED_TRACE(what);
    torch::manual_seed(seed);
    ModelConfig config = referenceConfigFor(manifest, "", dtype);
    config.nBackwards = 1;
    config.solver.tolerance = tolerance;
    config.solver.maxIterEval = 100000;
    std::shared_ptr<ref::BlockMixer> reference = ref::makeBlockMixer(config);
    reference->eval();
    CompiledLayer compiled(library, info.name, seed, dtype);
    importReferenceWeights(*reference, compiled);
    compiled.eval();
    compiled.solverOverrides.tolerance = tolerance;
    compiled.solverOverrides.max_iter = 100000;
    torch::NoGradGuard noGrad;
    torch::Tensor u =
        torch::randn({2, length, info.dModel}, torch::kFloat64).to(dtype);
    torch::Tensor whole = compiled.forward(u);
    const bool fixedPoint = compiled.lastIterations.defined();
    if (fixedPoint && compiled.lastResiduals.max().item<double>() > tolerance) {
      std::cout << fmt::format(
          "[ stream   ] {}: the whole sequence's solve stops at a relative "
          "residual of {:.1e}, above {:.0e}; not compared\n",
          what, compiled.lastResiduals.max().item<double>(), tolerance);
      continue;
    }
    // Unique fixed points: chunks give the whole sequence's output, and the
    // same solution on both sides even in f32.
    const bool unique = hasUniqueFixedPoint(config.kind);

    std::mt19937_64 rng(seed);
    std::vector<std::vector<int64_t>> splits = {std::vector<int64_t>(length, 1),
                                                {length},
                                                randomSplit(length, rng),
                                                randomSplit(length, rng)};
    for (const std::vector<int64_t> &sizes : splits) {
      SCOPED_TRACE(fmt::format("chunks {}", fmt::join(sizes, " ")));
      ChunkedRun run = runInChunks(compiled, u, sizes);
      ChunkedRun expected = runInChunks(*reference, u, sizes);
      if (run.worstResidual > tolerance || expected.worstResidual > tolerance) {
        std::cout << fmt::format(
            "[ stream   ] {}: chunks {}: a chunk's solve stops at a relative "
            "residual of {:.1e}; not compared\n",
            what, fmt::join(sizes, " "),
            std::max(run.worstResidual, expected.worstResidual));
        continue;
      }
      const double fromReference =
          relativeDifference(run.output, expected.output);
      const double fromWhole = relativeDifference(run.output, whole);
      if (f64 || unique) {
        EXPECT_LE(fromReference, bound);
      }
      if (unique || sizes.size() == 1) {
        EXPECT_LE(fromWhole, bound);
      }
      if (sizes.size() == size_t(length))
        std::cout << fmt::format(
            "[ stream   ] {}: one token per chunk: {:.1e} from the "
            "reference's chunks, {:.1e} from the whole sequence; iterations "
            "per token {:.0f}\n",
            what, fromReference, fromWhole, fmt::join(run.iterations, " "));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Streaming, ::testing::ValuesIn(modelNames()),
                         [](const auto &info) { return info.param; });

TEST(StreamingLanguageModel, ChunksGiveTheWholeSequencesLogits) {
  // A stack of FP-RNN layers, whose fixed points are unique here.
  const uint64_t seed = fp::test::testSeed();
  torch::manual_seed(seed);
  ModelConfig config = convergedConfig("fp_rnn");
  config.nLayers = 2;
  config.vocabSize = 20;
  ref::LanguageModel model(config);
  model.eval();
  torch::NoGradGuard noGrad;
  torch::Tensor tokens = torch::randint(20, {2, 9}, torch::kLong);
  torch::Tensor whole = model.forward(tokens);
  std::vector<ref::ChunkState> state;
  std::vector<torch::Tensor> logits;
  int64_t begin = 0;
  for (int64_t size : {1, 3, 1, 4}) {
    logits.push_back(model.forwardChunk(tokens.narrow(1, begin, size), state));
    begin += size;
  }
  EXPECT_EQ(state.size(), 2u);
  EXPECT_LE(relativeDifference(torch::cat(logits, 1), whole), kBound);
}
