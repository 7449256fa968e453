//===- DialectTest.cpp - Build and verify fp IR via the C++ API -*- C++ -*-===//
//
// Builds fp programs with the C++ builders (what the frontend and the passes
// do), verifies them, and checks that the verifier rejects broken ones with
// the expected message.
//
//===----------------------------------------------------------------------===//

#include "fp/Dialect/FpDialect.h"
#include "fp/Dialect/FpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::fp;

namespace {

class FpDialectTest : public ::testing::Test {
protected:
  FpDialectTest() : builder(&context), loc(builder.getUnknownLoc()) {
    context.loadDialect<FPDialect, arith::ArithDialect, func::FuncDialect>();
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
    // Collect verifier messages instead of printing them.
    handler.emplace(&context, [this](Diagnostic &diag) {
      messages.push_back(diag.str());
      return success();
    });
  }

  /// A function taking one activation `tensor<?x?x<channels>xf32>`, with
  /// the builder inside its body.
  func::FuncOp makeFunction(int64_t channels) {
    auto type = activationType(channels);
    auto fn = func::FuncOp::create(builder, loc, "layer",
                                   builder.getFunctionType({type}, {type}));
    builder.setInsertionPointToStart(fn.addEntryBlock());
    return fn;
  }

  RankedTensorType activationType(int64_t channels) {
    return RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, channels},
        builder.getF32Type());
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc;
  OwningOpRef<ModuleOp> module;
  std::optional<ScopedDiagnosticHandler> handler;
  std::vector<std::string> messages;
};

/// y = fixed_point(y ↦ l2norm(linear(shift(y)) + x)): a small map built the
/// way the frontend will build layers.
TEST_F(FpDialectTest, BuildsAndVerifiesFixedPointProgram) {
  func::FuncOp fn = makeFunction(8);
  Value x = fn.getArgument(0);
  auto weightType = RankedTensorType::get({8, 8}, builder.getF32Type());
  Value weight = ParamOp::create(
      builder, loc, weightType, builder.getStringAttr("W"),
      InitAttr::get(&context, InitKind::FanInUniform, {}, StringAttr()),
      /*decay=*/builder.getUnitAttr());

  auto solver = SolverAttr::getReferenceDefaults(&context);
  auto backward = BackwardAttr::get(&context, BackwardMode::OneStep);
  auto loop = FixedPointOp::create(
      builder, loc, ValueRange{x}, solver, backward,
      [&](OpBuilder &b, Location l, ValueRange iterates) {
        Value shifted = ShiftOp::create(b, l, iterates[0], /*offset=*/1);
        Value mixed = LinearOp::create(b, l, x.getType(), shifted, weight,
                                       /*gain=*/Value(), /*bias=*/Value());
        Value sum = arith::AddFOp::create(b, l, mixed, x);
        Value next = L2NormOp::create(b, l, sum, b.getF64FloatAttr(1e-5));
        YieldOp::create(b, l, ValueRange{next});
      });
  func::ReturnOp::create(builder, loc, loop.getFixedPoints());

  ASSERT_TRUE(succeeded(verify(*module))) << "messages: " << messages.size();
  EXPECT_TRUE(messages.empty());

  // Results: the fixed point, typed like the iterate, and one i32 count per
  // sample.
  EXPECT_EQ(loop.getNumIterates(), 1u);
  EXPECT_EQ(loop.getFixedPoints()[0].getType(), x.getType());
  auto counts = loop.getIterations().getType();
  EXPECT_EQ(counts.getRank(), 1);
  EXPECT_TRUE(counts.isDynamicDim(0));
  EXPECT_TRUE(counts.getElementType().isInteger(32));
  EXPECT_EQ(loop.getSolver().getQuantile().convertToDouble(), 0.75);
  EXPECT_EQ(loop.getSolver().getMaxIterEval(), 1000);

  // The loop-invariant parameter stays outside the body; the body sees the
  // iterate as its only block argument.
  EXPECT_EQ(loop.getRegionIterArgs().size(), 1u);
  EXPECT_TRUE(loop.isDefinedOutsideOfLoop(weight));

  // The printed form parses back to an equivalent, verified module.
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(reparsed);
  EXPECT_TRUE(succeeded(verify(*reparsed)));
  std::string again;
  llvm::raw_string_ostream os2(again);
  reparsed->print(os2);
  EXPECT_EQ(text, again);
}

TEST_F(FpDialectTest, RejectsYieldOfWrongType) {
  func::FuncOp fn = makeFunction(8);
  Value x = fn.getArgument(0);
  auto loop = FixedPointOp::create(
      builder, loc, ValueRange{x}, SolverAttr::getReferenceDefaults(&context),
      BackwardAttr::get(&context, BackwardMode::OneStep),
      [&](OpBuilder &b, Location l, ValueRange iterates) {
        // Yields a 4-channel slice for an 8-channel iterate.
        Value wrong = SliceOp::create(b, l, activationType(4), iterates[0],
                                      /*start=*/0, /*end=*/4);
        YieldOp::create(b, l, ValueRange{wrong});
      });
  func::ReturnOp::create(builder, loc, loop.getFixedPoints());

  EXPECT_TRUE(failed(verify(*module)));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("expects yielded value #0 to have type"),
            std::string::npos)
      << messages[0];
}

TEST_F(FpDialectTest, SolverAttrRejectsBadSettings) {
  auto emit = [&]() { return emitError(loc); };
  auto make = [&](double tolerance, double quantile, int64_t maxIterTrain) {
    return SolverAttr::getChecked(emit, &context, llvm::APFloat(tolerance),
                                  llvm::APFloat(quantile), maxIterTrain,
                                  int64_t{1000}, llvm::APFloat(0.99),
                                  llvm::APFloat(0.9), int64_t{15});
  };
  EXPECT_FALSE(make(/*tolerance=*/0.0, 0.75, 100));
  EXPECT_FALSE(make(0.1, /*quantile=*/1.5, 100));
  EXPECT_FALSE(make(0.1, 0.75, /*maxIterTrain=*/0));
  EXPECT_TRUE(make(0.1, 0.75, 100));
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0], "solver tolerance must be positive, got 0.000000e+00");
  EXPECT_NE(messages[1].find("quantile must lie in [0, 1]"), std::string::npos);
  EXPECT_NE(messages[2].find("max_iter_train must be at least 1"),
            std::string::npos);
}

TEST_F(FpDialectTest, BackwardAttrChecksModeArguments) {
  auto emit = [&]() { return emitError(loc); };
  auto make = [&](BackwardMode mode, int64_t steps, double tolerance) {
    return BackwardAttr::getChecked(emit, &context, mode, steps,
                                    llvm::APFloat(tolerance));
  };
  EXPECT_TRUE(make(BackwardMode::Truncated, /*steps=*/4, 0.0));
  EXPECT_TRUE(make(BackwardMode::Implicit, 0, /*tolerance=*/1e-6));
  EXPECT_FALSE(make(BackwardMode::Neumann, 0, 0.0));
  EXPECT_FALSE(make(BackwardMode::Implicit, 0, 0.0));
  EXPECT_FALSE(make(BackwardMode::OneStep, 3, 0.0));
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_NE(messages[0].find("'neumann' needs steps >= 1"), std::string::npos);
  EXPECT_NE(messages[1].find("'implicit' needs a positive tolerance"),
            std::string::npos);
  EXPECT_NE(messages[2].find("'one_step' takes no steps"), std::string::npos);
}

} // namespace
