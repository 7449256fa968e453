//===- fpc.cpp - The fp compiler driver -------------------------*- C++ -*-===//
//
// `fpc model.fp -o model.so` parses a model written in the .fp language
// (docs/dsl.md), runs the fp pipeline (the same buildFpPipeline as
// `fp-opt --fp-pipeline`), emits the host C++ of the model library and
// compiles it with the host compiler into a shared library implementing the
// model ABI (docs/abi.md). `--emit=<stage>` prints an intermediate stage
// instead; `--dump-dir` writes all of them. Compiled libraries are cached by
// the hash of the generated source and the compile command. Errors are
// printed as `file:line:col: error: ...`, and fpc exits with status 1.
//
//===----------------------------------------------------------------------===//

#include "fp/Codegen/HostEmitter.h"
#include "fp/Codegen/Manifest.h"
#include "fp/Frontend/MLIRGen.h"
#include "fp/InitAll.h"
#include "fp/Transforms/Pipeline.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#ifndef FP_RUNTIME_INCLUDE_DIR
#error "FP_RUNTIME_INCLUDE_DIR must name the runtime's include directory"
#endif

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class EmitStage { MLIR, Lowered, Host, Manifest, SharedLibrary };

cl::OptionCategory fpcCategory("fpc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.fp>"),
                               cl::Required, cl::cat(fpcCategory));
cl::opt<std::string>
    outputFile("o",
               cl::desc("Output file ('-' for stdout; default: <model>.so "
                        "for --emit=so, stdout otherwise)"),
               cl::value_desc("file"), cl::cat(fpcCategory));
cl::opt<EmitStage> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitStage::SharedLibrary),
    cl::values(clEnumValN(EmitStage::MLIR, "mlir",
                          "the model in the fp dialect, as "
                          "parsed"),
               clEnumValN(EmitStage::Lowered, "lowered",
                          "the IR after the fp pipeline (the emitters' input)"),
               clEnumValN(EmitStage::Host, "host",
                          "the host C++ of the library"),
               clEnumValN(EmitStage::Manifest, "manifest",
                          "the library's JSON manifest"),
               clEnumValN(EmitStage::SharedLibrary, "so",
                          "a shared library (model.so)")),
    cl::cat(fpcCategory));
enum class Target { CPU };
cl::opt<Target>
    target("target", cl::desc("Targets compiled into the library"),
           cl::init(Target::CPU),
           cl::values(clEnumValN(Target::CPU, "cpu", "host code only")),
           cl::cat(fpcCategory));
cl::list<std::string> includeDirs("I",
                                  cl::desc("Directory searched by imports"),
                                  cl::value_desc("dir"), cl::Prefix,
                                  cl::cat(fpcCategory));
enum class ElementType { F32, F64 };
cl::opt<ElementType> elementType(
    "element-type", cl::desc("Element type of every tensor in the IR"),
    cl::init(ElementType::F32),
    cl::values(clEnumValN(ElementType::F32, "f32", "32-bit floats"),
               clEnumValN(ElementType::F64, "f64", "64-bit floats")),
    cl::cat(fpcCategory));
cl::list<std::string>
    modelOverrides("set",
                   cl::desc("Override an integer model field: d_model, "
                            "n_layers, vocab or pad_vocab_multiple"),
                   cl::value_desc("field=value"), cl::cat(fpcCategory));
cl::opt<std::string>
    dumpDir("dump-dir",
            cl::desc("Write every stage (parsed and lowered IR, host C++, "
                     "manifest) into this directory"),
            cl::value_desc("dir"), cl::cat(fpcCategory));
cl::opt<std::string> hostArch(
    "march",
    cl::desc("CPU the host code is compiled for, as the host compiler's "
             "-march (default: native, the CPU running fpc; a generic one "
             "such as x86-64 makes a library other machines can load)"),
    cl::value_desc("cpu"), cl::init("native"), cl::cat(fpcCategory));
cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Where compiled libraries are cached (default: $FPC_CACHE_DIR, "
             "else $XDG_CACHE_HOME/fpc, else ~/.cache/fpc)"),
    cl::value_desc("dir"), cl::cat(fpcCategory));
cl::opt<bool> noCache("no-cache", cl::desc("Always run the host compiler"),
                      cl::cat(fpcCategory));
cl::opt<bool> verbose("v", cl::desc("Print the host compiler command"),
                      cl::cat(fpcCategory));

int fail(const llvm::Twine &message) {
  llvm::errs() << "fpc: error: " << message << "\n";
  return 1;
}

/// Writes `text` to `path`, atomically.
LogicalResult writeFile(StringRef path, StringRef text) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "fpc: error: " << error << "\n";
    return failure();
  }
  file->os() << text;
  file->keep();
  return success();
}

/// The host compiler: $CXX, else c++ on the PATH.
std::string hostCompiler() {
  if (std::optional<std::string> cxx = llvm::sys::Process::GetEnv("CXX"))
    if (!cxx->empty())
      return *cxx;
  return "c++";
}

std::string runtimeIncludeDir() {
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("FPC_RUNTIME_INCLUDE"))
    return *dir;
  return FP_RUNTIME_INCLUDE_DIR;
}

std::string defaultCacheDir() {
  if (!cacheDir.empty())
    return cacheDir;
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("FPC_CACHE_DIR"))
    return *dir;
  SmallString<256> path;
  if (std::optional<std::string> xdg =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME")) {
    path = *xdg;
  } else if (llvm::sys::path::home_directory(path)) {
    llvm::sys::path::append(path, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "fpc");
  return std::string(path);
}

/// The arguments of the host compiler for `source` → `output`.
std::vector<std::string> hostCompileArgs(StringRef compiler, StringRef source,
                                         StringRef output) {
  return {compiler.str(), "-std=c++17", "-O2", "-march=" + hostArch, "-fPIC",
          "-shared", "-fvisibility=hidden", "-fopenmp",
          // Keep a · b + c as two roundings, as the eager reference does.
          "-ffp-contract=off",
          // Let loops with selects vectorise; no code here reads FP flags.
          "-fno-trapping-math", "-w", "-I" + runtimeIncludeDir(), source.str(),
          "-o", output.str(), "-lopenblas"};
}

/// Compiles the host source into `output`, or copies a cached library.
int buildLibrary(StringRef source, StringRef output) {
  std::string compiler = hostCompiler();
  auto program = llvm::sys::findProgramByName(compiler);
  if (!program || !llvm::sys::fs::can_execute(*program))
    return fail("cannot find the host compiler '" + compiler +
                "'; install a C++ compiler or set CXX");

  // The cache key covers the generated code, the command and the kernels
  // it includes.
  llvm::SHA256 hash;
  hash.update(source);
  for (const std::string &arg : hostCompileArgs(*program, "", ""))
    hash.update(arg);
  // -march=native means this CPU: a cache shared by machines must not hand
  // one's library to another.
  if (hostArch == "native") {
    hash.update(llvm::sys::getHostCPUName());
    std::vector<std::string> features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second ? "+" : "-") + feature.first().str());
    llvm::sort(features);
    for (const std::string &feature : features)
      hash.update(feature);
  }
  for (StringRef header :
       {"fp/Runtime/Kernels/Host.h", "fp/Runtime/Kernels/HostEntry.h",
        "fp/Runtime/ModelABI.h"}) {
    SmallString<256> path(runtimeIncludeDir());
    llvm::sys::path::append(path, header);
    auto text = llvm::MemoryBuffer::getFile(path);
    if (!text)
      return fail("cannot read '" + path + "': " + text.getError().message() +
                  "; set FPC_RUNTIME_INCLUDE to the runtime's include "
                  "directory");
    hash.update((*text)->getBuffer());
  }
  std::string key = llvm::toHex(hash.final(), /*LowerCase=*/true);
  std::string cache = noCache ? "" : defaultCacheDir();
  SmallString<256> cached;
  if (!cache.empty()) {
    cached = cache;
    llvm::sys::path::append(cached, key + ".so");
    if (llvm::sys::fs::exists(cached)) {
      if (std::error_code ec = llvm::sys::fs::copy_file(cached, output))
        return fail("cannot write '" + output + "': " + ec.message());
      if (verbose)
        llvm::errs() << "fpc: using the cached library " << cached << "\n";
      return 0;
    }
  }

  SmallString<128> sourcePath, logPath, libPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fpc-model", "cpp", sourcePath))
    return fail("cannot create a temporary file: " + ec.message());
  llvm::FileRemover removeSource(sourcePath);
  llvm::sys::fs::createTemporaryFile("fpc-model", "log", logPath);
  llvm::FileRemover removeLog(logPath);
  llvm::sys::fs::createTemporaryFile("fpc-model", "so", libPath);
  llvm::FileRemover removeLib(libPath);
  if (failed(writeFile(sourcePath, source)))
    return 1;

  std::vector<std::string> args =
      hostCompileArgs(*program, sourcePath, libPath);
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  if (verbose)
    llvm::errs() << "fpc: " << llvm::join(argRefs, " ") << "\n";
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt,
                                         redirects, 0, 0, &error);
  if (status != 0) {
    // The first lines of the compiler's output name the first problem.
    std::string log;
    if (auto text = llvm::MemoryBuffer::getFile(logPath)) {
      SmallVector<StringRef> lines;
      (*text)->getBuffer().split(lines, '\n');
      constexpr size_t kMaxLines = 40;
      for (size_t i = 0; i < std::min(lines.size(), kMaxLines); ++i)
        log += lines[i].str() + "\n";
      if (lines.size() > kMaxLines)
        log += "[" + std::to_string(lines.size() - kMaxLines) +
               " more lines; rerun with --dump-dir to keep the source]\n";
    }
    llvm::errs() << "fpc: error: the host compiler failed"
                 << (error.empty() ? "" : " (" + error + ")") << " with exit "
                 << status << ":\n  " << llvm::join(argRefs, " ") << "\n"
                 << log;
    return 1;
  }
  if (std::error_code ec = llvm::sys::fs::copy_file(libPath, output))
    return fail("cannot write '" + output + "': " + ec.message());
  if (!cached.empty()) {
    // Best effort: a cache that cannot be written only costs time.
    if (!llvm::sys::fs::create_directories(cache)) {
      SmallString<256> partial(cached);
      partial += ".partial";
      if (!llvm::sys::fs::copy_file(libPath, partial))
        llvm::sys::fs::rename(partial, cached);
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&fpcCategory, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(argc, argv, "fpc: the fp compiler\n");
  if (hostArch.empty() || !llvm::all_of(hostArch.getValue(), [](char c) {
        return llvm::isAlnum(c) || llvm::is_contained("._+-", c);
      }))
    return fail("--march expects a CPU name such as native or x86-64, got '" +
                hostArch + "'");

  DialectRegistry registry;
  fp::registerAllFpDialects(registry);
  MLIRContext context(registry);

  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  std::string stem = llvm::sys::path::stem(inputFile).str();
  auto dump = [&](StringRef suffix, StringRef text) -> LogicalResult {
    if (dumpDir.empty())
      return success();
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir)) {
      llvm::errs() << "fpc: error: cannot create '" << dumpDir
                   << "': " << ec.message() << "\n";
      return failure();
    }
    SmallString<256> path(dumpDir);
    llvm::sys::path::append(path, stem + suffix);
    return writeFile(path, text);
  };
  auto printed = [](ModuleOp module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    os << "\n";
    return text;
  };
  auto emitText = [&](StringRef text) -> int {
    auto output = openOutputFile(
        outputFile.empty() ? std::string("-") : outputFile.getValue(), &error);
    if (!output)
      return fail(error);
    output->os() << text;
    output->keep();
    return 0;
  };

  fp::frontend::FrontendOptions options;
  options.includeDirs.assign(includeDirs.begin(), includeDirs.end());
  options.elementType = elementType == ElementType::F64 ? "f64" : "f32";
  for (StringRef assignment : modelOverrides) {
    auto [key, text] = assignment.split('=');
    int64_t value = 0;
    if (key.empty() || text.getAsInteger(10, value))
      return fail("--set expects field=integer, got '" + assignment + "'");
    if (!llvm::is_contained(
            {"d_model", "n_layers", "vocab", "pad_vocab_multiple"}, key))
      return fail("--set cannot override '" + key +
                  "'; expected d_model, n_layers, vocab or "
                  "pad_vocab_multiple");
    options.modelOverrides[key.str()] = value;
  }
  OwningOpRef<ModuleOp> module =
      fp::frontend::importFpSource(sourceMgr, &context, options);
  if (!module)
    return 1;
  std::string parsed = printed(*module);
  if (failed(dump(".1-parsed.mlir", parsed)))
    return 1;
  if (emit == EmitStage::MLIR)
    return emitText(parsed);

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  fp::FpPipelineOptions pipelineOptions;
  fp::buildFpPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module)))
    return 1;
  std::string lowered = printed(*module);
  if (failed(dump(".2-lowered.mlir", lowered)))
    return 1;
  if (emit == EmitStage::Lowered)
    return emitText(lowered);

  fp::codegen::LibraryInfo info;
  info.source = inputFile;
  std::string hostSource;
  {
    llvm::raw_string_ostream os(hostSource);
    if (failed(fp::codegen::emitHostSource(*module, info, os)))
      return 1;
  }
  if (failed(dump(".host.cpp", hostSource)))
    return 1;
  if (emit == EmitStage::Host)
    return emitText(hostSource);

  if (emit == EmitStage::Manifest) {
    // The string fp_model_manifest() returns, from the same builder.
    FailureOr<std::vector<fp::codegen::LayerPlan>> plans =
        fp::codegen::planLayers(*module);
    if (failed(plans))
      return 1;
    FailureOr<std::string> manifest =
        fp::codegen::buildManifest(*module, *plans, info);
    if (failed(manifest))
      return 1;
    return emitText(*manifest + "\n");
  }

  std::string output = outputFile;
  if (output.empty())
    output = stem + ".so";
  if (output == "-")
    return fail("a shared library cannot be written to stdout; pass -o "
                "<file>.so");
  return buildLibrary(hostSource, output);
}
