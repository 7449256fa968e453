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
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <unistd.h>

#ifndef FP_RUNTIME_INCLUDE_DIR
#error "FP_RUNTIME_INCLUDE_DIR must name the runtime's include directory"
#endif

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class EmitStage { MLIR, Lowered, Host, Cuda, Manifest, SharedLibrary };

cl::OptionCategory fpcCategory("fpc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.fp>"),
                               cl::Required, cl::cat(fpcCategory));
cl::opt<std::string>
    outputFile("o",
               cl::desc("Output file ('-' for stdout; default: <model>.so "
                        "for --emit=so, stdout otherwise)"),
               cl::value_desc("file"), cl::cat(fpcCategory));
cl::opt<EmitStage>
    emit("emit", cl::desc("What to produce"),
         cl::init(EmitStage::SharedLibrary),
         cl::values(
             clEnumValN(EmitStage::MLIR, "mlir",
                        "the model in the fp dialect, as "
                        "parsed"),
             clEnumValN(EmitStage::Lowered, "lowered",
                        "the IR after the fp pipeline (the emitters' input)"),
             clEnumValN(EmitStage::Host, "host", "the host C++ of the library"),
             clEnumValN(EmitStage::Cuda, "cuda", "the CUDA C++ of the library"),
             clEnumValN(EmitStage::Manifest, "manifest",
                        "the library's JSON manifest"),
             clEnumValN(EmitStage::SharedLibrary, "so",
                        "a shared library (model.so)")),
         cl::cat(fpcCategory));
enum class Target { CPU, CUDA, All };
cl::opt<Target> target(
    "target", cl::desc("Targets compiled into the library"),
    cl::init(Target::CPU),
    cl::values(clEnumValN(Target::CPU, "cpu", "host code only"),
               clEnumValN(Target::CUDA, "cuda",
                          "CUDA code only (the entry points run on the host)"),
               clEnumValN(Target::All, "all", "host and CUDA code")),
    cl::cat(fpcCategory));
cl::list<std::string> cudaArchs(
    "cuda-arch",
    cl::desc("CUDA architectures the CUDA unit is compiled for, as compute "
             "capabilities (e.g. 80,90; default: those of the GPUs "
             "nvidia-smi lists, else 90)"),
    cl::value_desc("sm"), cl::CommaSeparated, cl::cat(fpcCategory));
cl::opt<unsigned>
    cpus("cpus",
         cl::desc("CPUs the compilers may use (default: every CPU fpc may run "
                  "on); the host compiler and nvcc's parts run at once, and "
                  "ptxas assembles each part's kernels on the CPUs they leave"),
         cl::value_desc("n"), cl::cat(fpcCategory));
cl::list<std::string> dtypeList(
    "dtypes",
    cl::desc("Element types a call of the library may use (default: "
             "f32,f64,bf16; bf16 keeps every buffer in bfloat16 and computes "
             "in f32)"),
    cl::value_desc("list"), cl::CommaSeparated, cl::cat(fpcCategory));
cl::list<std::string> includeDirs("I",
                                  cl::desc("Directory searched by imports"),
                                  cl::value_desc("dir"), cl::Prefix,
                                  cl::cat(fpcCategory));
cl::opt<fp::frontend::ElementType> elementType(
    "element-type", cl::desc("Element type of every tensor in the IR"),
    cl::init(fp::frontend::ElementType::F32),
    fp::frontend::getElementTypeOptionValues(), cl::cat(fpcCategory));
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
cl::opt<bool> noFuse("no-fuse",
                     cl::desc("Run every linear map, per-token op and scan as "
                              "a kernel of its own (skip fp-merge-linears and "
                              "fp-fuse-mix-scan)"),
                     cl::cat(fpcCategory));
cl::opt<bool> noFuseScans(
    "no-fuse-scans",
    cl::desc("Keep scans out of fused kernels: the per-token work around a "
             "scan runs in per-token kernels and the scan in a kernel of its "
             "own, parallel over samples and channels (the split schedule "
             "alone, on every target)"),
    cl::cat(fpcCategory));
cl::opt<bool> noChunked(
    "no-chunked",
    cl::desc("Leave out each layer's chunked entry point (fp-derive-chunked), "
             "which runs a chunk of each sequence from a carried state: "
             "streaming inference and generation (docs/streaming.md)"),
    cl::cat(fpcCategory));
cl::opt<bool> noSplitSchedule(
    "no-split-schedule",
    cl::desc("Compile only the fused schedule for CUDA. By default a CUDA "
             "library whose fused kernels hold scans also holds the split "
             "schedule (as --no-fuse-scans compiles it), and a CUDA call takes "
             "it where the batch is too small for one block per sample to "
             "fill the GPU"),
    cl::cat(fpcCategory));
cl::opt<bool> noTransposeScanA(
    "no-transpose-scan-a",
    cl::desc("Fused selective scans read their state matrix A as it is "
             "(channels x N) rather than transposed (skip "
             "fp-transpose-scan-a)"),
    cl::cat(fpcCategory));
cl::opt<bool> noStageInputs(
    "no-stage-inputs",
    cl::desc("Fused kernels run in time order read each token's input rows "
             "where they lie rather than from copies made a token ahead"),
    cl::cat(fpcCategory));
cl::opt<bool> noCudaExpf(
    "no-cuda-expf",
    cl::desc("CUDA kernels compute e^x in f32 and bf16 with the host's "
             "polynomial, bit for bit the host kernels' values, rather than "
             "with CUDA's expf (within 2 ulp, as PyTorch's CUDA kernels; a "
             "third of the instructions)"),
    cl::cat(fpcCategory));
cl::opt<bool> withBackward(
    "backward",
    cl::desc("Derive and compile each layer's backward (fp-derive-backward) "
             "for every target"),
    cl::cat(fpcCategory));
cl::opt<bool> saveProducts(
    "save-products",
    cl::desc("With --backward: the training forward also saves the products "
             "of the linear maps over tokens that the backward reads, so the "
             "backward runs no GEMM of the forward again (more memory per "
             "token in training and inference workspace)"),
    cl::cat(fpcCategory));
cl::opt<bool> noCache("no-cache", cl::desc("Always run the host compiler"),
                      cl::cat(fpcCategory));
cl::opt<bool> verbose("v", cl::desc("Print the host compiler command"),
                      cl::cat(fpcCategory));

int fail(const llvm::Twine &message) {
  llvm::errs() << "fpc: error: " << message << "\n";
  return 1;
}

/// Writes `contents` to `path` atomically: into a temporary file in the same
/// directory, flushed to disk, then renamed over `path`. A reader of `path`
/// (a trainer with the library loaded, say) sees the old file or the new
/// one, never part of one; a write that fails (a full disk) leaves the old
/// file as it was; the temporary file goes on failure and on SIGINT or
/// SIGTERM. `mode` gives the permissions of a new file.
LogicalResult writeFile(StringRef path, StringRef contents,
                        unsigned mode = 0666) {
  SmallString<256> model(path);
  model += ".tmp-%%%%%%";
  llvm::Expected<llvm::sys::fs::TempFile> temp =
      llvm::sys::fs::TempFile::create(model, mode);
  if (!temp) {
    llvm::errs() << "fpc: error: cannot write '" << path
                 << "': " << llvm::toString(temp.takeError()) << "\n";
    return failure();
  }
  std::string problem;
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os << contents;
    os.flush();
    if (os.has_error()) {
      problem = os.error().message();
      os.clear_error();
    } else if (::fsync(temp->FD) != 0) {
      problem = std::error_code(errno, std::generic_category()).message();
    }
  }
  if (problem.empty())
    if (llvm::Error error = temp->keep(path))
      problem = llvm::toString(std::move(error));
  if (problem.empty())
    return success();
  llvm::consumeError(temp->discard());
  llvm::errs() << "fpc: error: cannot write '" << path << "': " << problem
               << "\n";
  return failure();
}

/// A temporary file that is removed when it goes out of scope, and on
/// SIGINT or SIGTERM (LLVM's interrupt signals).
class Temporary {
public:
  Temporary() = default;
  Temporary(const Temporary &) = delete;
  Temporary &operator=(const Temporary &) = delete;
  std::error_code create(StringRef suffix) {
    std::error_code ec =
        llvm::sys::fs::createTemporaryFile("fpc-model", suffix, path);
    if (!ec)
      llvm::sys::RemoveFileOnSignal(path);
    return ec;
  }
  ~Temporary() {
    if (path.empty())
      return;
    llvm::sys::fs::remove(path);
    llvm::sys::DontRemoveFileOnSignal(path);
  }
  StringRef get() const { return path; }

private:
  SmallString<128> path;
};

/// The compilers fpc runs at once: the host compiler and an nvcc per part
/// of the CUDA unit (one per element type).
constexpr size_t kMaxCompilers = 4;

/// The compilers fpc is waiting for, 0 where none: a signal that stops fpc
/// stops them too (onInterrupt).
std::atomic<llvm::sys::procid_t> runningChildren[kMaxCompilers] = {};

/// Runs on SIGINT and SIGTERM, after LLVM removed the files registered for
/// removal (the temporaries): kills the host or CUDA compiler fpc waits
/// for, which would otherwise run on and write into a removed directory
/// entry, and exits as an interrupted program does. Async-signal-safe.
void onInterrupt() {
  for (const auto &running : runningChildren)
    if (llvm::sys::procid_t child = running.load())
      ::kill(child, SIGKILL);
  static const char message[] = "fpc: interrupted\n";
  (void)!::write(STDERR_FILENO, message, sizeof(message) - 1);
  ::_exit(130);
}

/// Fails, with a message, where `output` is the model source fpc reads (the
/// same file, also through links), which writing it would destroy.
LogicalResult refuseOverwritingInput(StringRef output) {
  bool same = false;
  if (llvm::sys::fs::equivalent(inputFile, output, same) || !same)
    return success();
  llvm::errs() << "fpc: error: the output '" << output << "' is the input '"
               << inputFile << "'; pass another -o\n";
  return failure();
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

/// Where the CUDA toolkit is: $CUDA_HOME, else $CUDA_PATH, else
/// /usr/local/cuda.
std::string cudaHome() {
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (std::optional<std::string> dir = llvm::sys::Process::GetEnv(variable))
      if (!dir->empty())
        return *dir;
  return "/usr/local/cuda";
}

/// The CUDA compiler: $NVCC, else <cuda home>/bin/nvcc, else nvcc on the
/// PATH.
std::string cudaCompiler() {
  if (std::optional<std::string> nvcc = llvm::sys::Process::GetEnv("NVCC"))
    if (!nvcc->empty())
      return *nvcc;
  SmallString<256> path(cudaHome());
  llvm::sys::path::append(path, "bin", "nvcc");
  if (llvm::sys::fs::can_execute(path))
    return std::string(path);
  return "nvcc";
}

/// One program run of a library build.
struct Command {
  std::string what; ///< "the host compiler", "nvcc"
  std::string program;
  std::vector<std::string> args; ///< args[0] is the program
};

/// The optimisation level of everything the host compiler compiles: the host
/// unit, and the CUDA parts' host side (their launch code), which holds the
/// same forward text for the CPU.
constexpr const char *kHostOptLevel = "-O2";

/// The part of the CUDA unit that `part` (one of codegen::cudaParts) selects,
/// or the whole unit where `part` is empty → an object file, for every
/// architecture asked for, ptxas assembling its kernels on `ptxasThreads`.
Command deviceCompileCommand(StringRef nvcc, StringRef source, StringRef part,
                             StringRef object, unsigned ptxasThreads) {
  Command command{"nvcc", nvcc.str(), {nvcc.str()}};
  auto &args = command.args;
  // nvcc's -O is the level of the part's host side alone; cicc and ptxas
  // optimise the device code fully whatever it says.
  for (StringRef arg :
       {"-std=c++17", kHostOptLevel, "--expt-relaxed-constexpr",
        // Two roundings for a · b + c, as on the host.
        "-fmad=false", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-w"})
    args.push_back(arg.str());
  // ptxas compiles each kernel alone, so its threads leave every kernel's
  // machine code as it is (unlike nvcc's own --split-compile, which splits
  // cicc's optimisation and changes the PTX).
  if (ptxasThreads > 1)
    args.push_back("-Xptxas=--split-compile=" + std::to_string(ptxasThreads));
  // nvcc compiles for several architectures in parallel.
  if (cudaArchs.size() > 1) {
    args.emplace_back("--threads");
    args.emplace_back("0");
  }
  for (const std::string &arch : cudaArchs) {
    args.emplace_back("-gencode");
    args.push_back("arch=compute_" + arch + ",code=sm_" + arch);
  }
  if (!part.empty())
    args.push_back(("-D" + part).str());
  args.push_back("-I" + runtimeIncludeDir());
  args.emplace_back("-c");
  args.push_back(source.str());
  args.emplace_back("-o");
  args.push_back(object.str());
  return command;
}

/// The host unit → an object file.
Command hostCompileCommand(StringRef compiler, StringRef source,
                           StringRef object) {
  Command command{"the host compiler", compiler.str(), {compiler.str()}};
  auto &args = command.args;
  for (StringRef arg : {"-std=c++17", kHostOptLevel})
    args.push_back(arg.str());
  args.push_back("-march=" + hostArch);
  for (StringRef arg : {"-fPIC", "-fvisibility=hidden", "-fopenmp",
                        // Keep a · b + c as two roundings, as the eager
                        // reference does.
                        "-ffp-contract=off",
                        // Let loops with selects vectorise; no code here
                        // reads FP flags.
                        "-fno-trapping-math", "-w"})
    args.push_back(arg.str());
  args.push_back("-I" + runtimeIncludeDir());
  args.emplace_back("-c");
  args.push_back(source.str());
  args.emplace_back("-o");
  args.push_back(object.str());
  return command;
}

/// The host object (and the CUDA objects, if any) → the shared library.
Command linkCommand(StringRef compiler, StringRef hostObject,
                    ArrayRef<std::string> deviceObjects, StringRef output) {
  Command command{"the linker", compiler.str(), {compiler.str()}};
  auto &args = command.args;
  for (StringRef arg : {"-shared", "-fopenmp"})
    args.push_back(arg.str());
  args.push_back(hostObject.str());
  llvm::append_range(args, deviceObjects);
  args.emplace_back("-o");
  args.push_back(output.str());
  args.emplace_back("-lopenblas");
  if (!deviceObjects.empty()) {
    std::string lib = cudaHome() + "/lib64";
    args.push_back("-L" + lib);
    args.push_back("-Wl,-rpath," + lib);
    args.emplace_back("-lcublas");
    args.emplace_back("-lcudart");
  }
  return command;
}

/// Finds `name` as given or on the PATH.
std::optional<std::string> findProgram(StringRef name) {
  auto program = llvm::sys::findProgramByName(name);
  if (!program || !llvm::sys::fs::can_execute(*program))
    return std::nullopt;
  return *program;
}

/// What the program `name` (found as given or on the PATH) writes to stdout
/// when run with `args`; none where it cannot be found, fails or takes over
/// `seconds`.
std::optional<std::string> outputOf(StringRef name, ArrayRef<StringRef> args,
                                    unsigned seconds) {
  std::optional<std::string> program = findProgram(name);
  Temporary listing;
  if (!program || listing.create("txt"))
    return std::nullopt;
  SmallVector<StringRef> argv = {*program};
  argv.append(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, listing.get(),
                                          StringRef("/dev/null")};
  if (llvm::sys::ExecuteAndWait(*program, argv, std::nullopt, redirects,
                                seconds) != 0)
    return std::nullopt;
  auto text = llvm::MemoryBuffer::getFile(listing.get());
  if (!text)
    return std::nullopt;
  return (*text)->getBuffer().str();
}

/// The threads each ptxas may assemble kernels on when `compilers` compilers
/// run at once: the CPUs they leave, shared, where the ptxas beside `nvcc`
/// (the one it runs) can use several (--split-compile; older ones cannot);
/// else 1. Threads beyond the CPUs would only add work: on two CPUs shared
/// by four compilers they did not shorten builds.
unsigned ptxasThreads(StringRef nvcc, unsigned compilers) {
  unsigned share = cpus / compilers;
  if (share < 2)
    return 1;
  SmallString<256> ptxas(llvm::sys::path::parent_path(nvcc));
  llvm::sys::path::append(ptxas, "ptxas");
  std::optional<std::string> help = outputOf(ptxas, {"--help"}, 10);
  return help && StringRef(*help).contains("--split-compile") ? share : 1;
}

/// The compute capabilities of the GPUs nvidia-smi lists ("90" for 9.0),
/// each once, in its order; none where there is no nvidia-smi, it fails or
/// it takes over 10 s.
std::vector<std::string> localCudaArchs() {
  std::optional<std::string> listing = outputOf(
      "nvidia-smi", {"--query-gpu=compute_cap", "--format=csv,noheader"}, 10);
  if (!listing)
    return {};
  std::vector<std::string> archs;
  SmallVector<StringRef> lines;
  StringRef(*listing).split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : lines) {
    std::string arch;
    for (char c : line.trim())
      if (c != '.')
        arch.push_back(c);
    if (!arch.empty() && llvm::all_of(arch, llvm::isDigit) &&
        !llvm::is_contained(archs, arch))
      archs.push_back(arch);
  }
  return archs;
}

/// Runs `commands` at the same time (at most kMaxCompilers) and waits for
/// them; on the first failure stops the others and prints the failed
/// command with the first lines of its output. Returns 0 when every one
/// succeeded.
int runAll(ArrayRef<Command> commands) {
  assert(commands.size() <= std::size(runningChildren) && "too many at once");
  struct Running {
    SmallVector<StringRef> args;
    Temporary log;
    llvm::sys::ProcessInfo child;
    std::string error;
    bool done = false;
  };
  std::vector<Running> running(commands.size());
  // Every log first: a failure to create one leaves no compiler running.
  for (Running &r : running)
    if (std::error_code ec = r.log.create("log"))
      return fail("cannot create a temporary file: " + ec.message());
  for (auto [index, command] : llvm::enumerate(commands)) {
    Running &r = running[index];
    r.args.assign(command.args.begin(), command.args.end());
    if (verbose)
      llvm::errs() << "fpc: " << llvm::join(r.args, " ") << "\n";
    std::optional<StringRef> redirects[] = {std::nullopt, r.log.get(),
                                            r.log.get()};
    r.child = llvm::sys::ExecuteNoWait(command.program, r.args, std::nullopt,
                                       redirects, 0, &r.error);
    runningChildren[index] = r.child.Pid;
  }
  auto stopOthers = [&] {
    for (auto [index, r] : llvm::enumerate(running)) {
      if (r.done || r.child.Pid == llvm::sys::ProcessInfo::InvalidPid)
        continue;
      ::kill(r.child.Pid, SIGKILL);
      llvm::sys::Wait(r.child, std::nullopt);
      runningChildren[index] = 0;
      r.done = true;
    }
  };
  for (size_t left = commands.size(); left > 0;) {
    for (auto [index, command] : llvm::enumerate(commands)) {
      Running &r = running[index];
      if (r.done)
        continue;
      int status = -1;
      if (r.child.Pid != llvm::sys::ProcessInfo::InvalidPid) {
        llvm::sys::ProcessInfo state =
            llvm::sys::Wait(r.child, /*SecondsToWait=*/0, &r.error, nullptr,
                            /*Polling=*/true);
        if (state.Pid == 0)
          continue; // still running
        status = state.ReturnCode;
      }
      r.done = true;
      runningChildren[index] = 0;
      --left;
      if (status == 0)
        continue;
      stopOthers();
      // The first lines of the compiler's output name the first problem.
      std::string log;
      if (auto text = llvm::MemoryBuffer::getFile(r.log.get())) {
        SmallVector<StringRef> lines;
        (*text)->getBuffer().split(lines, '\n');
        constexpr size_t kMaxLines = 40;
        for (size_t i = 0; i < std::min(lines.size(), kMaxLines); ++i)
          log += lines[i].str() + "\n";
        if (lines.size() > kMaxLines)
          log += "[" + std::to_string(lines.size() - kMaxLines) +
                 " more lines; rerun with --dump-dir to keep the source]\n";
      }
      llvm::errs() << "fpc: error: " << command.what << " failed"
                   << (r.error.empty() ? "" : " (" + r.error + ")")
                   << " with exit " << status << ":\n  "
                   << llvm::join(r.args, " ") << "\n"
                   << log;
      return 1;
    }
    if (left > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

/// Permissions of a library fpc writes, as a linker gives them (0777,
/// less the umask).
constexpr unsigned kLibraryMode = 0777;

/// The SHA-256 of `bytes`, in hex.
std::string contentHash(StringRef bytes) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)),
                     /*LowerCase=*/true);
}

/// Why the cache entry `library` cannot be used, or "" when it can: its
/// content must have the hash recorded beside it when it was written (in
/// `hashFile`), which a truncated, emptied or overwritten entry has not,
/// and it must hold `manifest`, the library's configuration as this call
/// would build it (fp_model_manifest's string), which an entry swapped for
/// another key's has not.
std::string checkCachedLibrary(StringRef library, StringRef hashFile,
                               StringRef manifest) {
  auto bytes = llvm::MemoryBuffer::getFile(library);
  if (!bytes)
    return "cannot read it: " + bytes.getError().message();
  auto recorded = llvm::MemoryBuffer::getFile(hashFile);
  if (!recorded)
    return "no content hash beside it";
  StringRef content = (*bytes)->getBuffer();
  if ((*recorded)->getBuffer().trim() != contentHash(content))
    return "its content does not match the hash recorded when it was written";
  if (!content.contains(manifest))
    return "it is not the library of this model and configuration";
  return "";
}

/// Compiles the host source (and the CUDA source, when not empty, once for
/// each of its `deviceParts`) into `output`, or copies a cached library that
/// checkCachedLibrary accepts for `manifest`. Every file is written
/// atomically (writeFile).
int buildLibrary(StringRef hostSource, StringRef deviceSource,
                 ArrayRef<std::string> deviceParts, StringRef manifest,
                 StringRef output) {
  assert(deviceSource.empty() ||
         (!deviceParts.empty() && deviceParts.size() < kMaxCompilers));
  std::string compiler = hostCompiler();
  std::optional<std::string> hostProgram = findProgram(compiler);
  if (!hostProgram)
    return fail("cannot find the host compiler '" + compiler +
                "'; install a C++ compiler or set CXX");
  std::optional<std::string> nvccProgram;
  if (!deviceSource.empty()) {
    std::string nvcc = cudaCompiler();
    nvccProgram = findProgram(nvcc);
    if (!nvccProgram)
      return fail("cannot find the CUDA compiler '" + nvcc +
                  "'; install the CUDA toolkit, set NVCC or CUDA_HOME, or "
                  "build for --target=cpu");
  }

  // The cache key covers the generated code, the commands and the kernels
  // they include.
  llvm::SHA256 hash;
  hash.update(hostSource);
  hash.update(deviceSource);
  for (const std::string &arg : hostCompileCommand(*hostProgram, "", "").args)
    hash.update(arg);
  SmallVector<std::string> noObjects(
      deviceSource.empty() ? 0 : deviceParts.size(), "o");
  for (const std::string &arg :
       linkCommand(*hostProgram, "", noObjects, "").args)
    hash.update(arg);
  if (nvccProgram)
    for (const std::string &part : deviceParts)
      for (const std::string &arg :
           // ptxas's threads do not change what it writes: a library is
           // cached for every count.
           deviceCompileCommand(*nvccProgram, "", part, "", 1).args)
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
  // Every header generated code may include: the whole Kernels library
  // (its files in path order, each with its path) and the model ABI.
  SmallVector<std::string> headers = {"fp/Runtime/ModelABI.h"};
  {
    SmallString<256> kernels(runtimeIncludeDir());
    llvm::sys::path::append(kernels, "fp", "Runtime", "Kernels");
    std::error_code error;
    for (llvm::sys::fs::recursive_directory_iterator it(kernels, error), end;
         it != end && !error; it.increment(error))
      if (llvm::sys::fs::is_regular_file(it->path()))
        headers.push_back("fp/Runtime/Kernels" +
                          it->path().substr(kernels.size()));
    if (error)
      return fail("cannot list '" + kernels + "': " + error.message() +
                  "; set FPC_RUNTIME_INCLUDE to the runtime's include "
                  "directory");
    llvm::sort(headers);
  }
  for (const std::string &header : headers) {
    SmallString<256> path(runtimeIncludeDir());
    llvm::sys::path::append(path, header);
    auto text = llvm::MemoryBuffer::getFile(path);
    if (!text)
      return fail("cannot read '" + path + "': " + text.getError().message() +
                  "; set FPC_RUNTIME_INCLUDE to the runtime's include "
                  "directory");
    hash.update(header);
    hash.update((*text)->getBuffer());
  }
  std::string key = llvm::toHex(hash.final(), /*LowerCase=*/true);
  std::string cache = noCache ? "" : defaultCacheDir();
  SmallString<256> cached, cachedHash;
  if (!cache.empty()) {
    cached = cache;
    llvm::sys::path::append(cached, key + ".so");
    cachedHash = cached;
    cachedHash += ".sha256";
    if (llvm::sys::fs::exists(cached)) {
      std::string problem = checkCachedLibrary(cached, cachedHash, manifest);
      if (problem.empty()) {
        auto library = llvm::MemoryBuffer::getFile(cached);
        if (!library)
          return fail("cannot read '" + cached +
                      "': " + library.getError().message());
        if (failed(writeFile(output, (*library)->getBuffer(), kLibraryMode)))
          return 1;
        if (verbose)
          llvm::errs() << "fpc: using the cached library " << cached << "\n";
        return 0;
      }
      llvm::errs() << "fpc: warning: ignoring the cached library " << cached
                   << " (" << problem << "); rebuilding it\n";
    }
  }

  Temporary host, hostObject, device, library;
  std::vector<Temporary> objects(nvccProgram ? deviceParts.size() : 0);
  std::vector<std::string> objectPaths;
  for (auto [file, suffix] :
       {std::pair{&host, "cpp"}, {&hostObject, "o"}, {&library, "so"}})
    if (std::error_code ec = file->create(suffix))
      return fail("cannot create a temporary file: " + ec.message());
  if (failed(writeFile(host.get(), hostSource)))
    return 1;
  // The host unit and the parts of the CUDA unit compile at the same time.
  std::vector<Command> compiles = {
      hostCompileCommand(*hostProgram, host.get(), hostObject.get())};
  if (nvccProgram) {
    if (std::error_code ec = device.create("cu"))
      return fail("cannot create a temporary file: " + ec.message());
    if (failed(writeFile(device.get(), deviceSource)))
      return 1;
    // The host compiler and, for each architecture, nvcc's parts; asked
    // only when compiling, not for a cached library.
    const unsigned compilers = 1 + deviceParts.size() * cudaArchs.size();
    const unsigned threads = ptxasThreads(*nvccProgram, compilers);
    if (verbose)
      llvm::errs() << "fpc: compiling the CUDA unit in " << deviceParts.size()
                   << " parts for sm_" << llvm::join(cudaArchs, ", sm_")
                   << "\n";
    for (auto [object, part] : llvm::zip_equal(objects, deviceParts)) {
      if (std::error_code ec = object.create("o"))
        return fail("cannot create a temporary file: " + ec.message());
      objectPaths.push_back(object.get().str());
      compiles.push_back(deviceCompileCommand(*nvccProgram, device.get(), part,
                                              object.get(), threads));
    }
  }
  if (int status = runAll(compiles))
    return status;
  if (int status = runAll({linkCommand(*hostProgram, hostObject.get(),
                                       objectPaths, library.get())}))
    return status;
  auto built = llvm::MemoryBuffer::getFile(library.get());
  if (!built)
    return fail("cannot read the library the host compiler wrote: " +
                built.getError().message());
  StringRef bytes = (*built)->getBuffer();
  if (failed(writeFile(output, bytes, kLibraryMode)))
    return 1;
  // Best effort: a cache that cannot be written only costs time. The hash
  // goes last: an entry without it is rebuilt.
  if (!cached.empty() && !llvm::sys::fs::create_directories(cache)) {
    llvm::sys::fs::remove(cachedHash);
    if (succeeded(writeFile(cached, bytes, kLibraryMode)))
      (void)writeFile(cachedHash, contentHash(bytes) + "\n");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // LLVM and MLIR options still parse (--mlir-print-ir-after-all and the
  // like) but are not listed: --help shows what a user of fpc sets.
  cl::HideUnrelatedOptions(fpcCategory);
  cl::ParseCommandLineOptions(argc, argv, "fpc: the fp compiler\n");
  llvm::sys::SetInterruptFunction(onInterrupt);
  if (!outputFile.empty() && outputFile != "-" &&
      failed(refuseOverwritingInput(outputFile)))
    return 1;
  if (saveProducts && !withBackward)
    return fail("--save-products needs --backward: only a training forward "
                "saves values for a backward");
  if (hostArch.empty() || !llvm::all_of(hostArch.getValue(), [](char c) {
        return llvm::isAlnum(c) || llvm::is_contained("._+-", c);
      }))
    return fail("--march expects a CPU name such as native or x86-64, got '" +
                hostArch + "'");
  // One architecture builds in half the time of two: by default the GPU's
  // at hand, or the H100's where there is none.
  if (cudaArchs.empty() && target != Target::CPU) {
    for (const std::string &arch : localCudaArchs())
      cudaArchs.push_back(arch);
    if (cudaArchs.empty())
      cudaArchs.push_back("90");
  }
  for (const std::string &arch : cudaArchs)
    if (arch.empty() || !llvm::all_of(arch, llvm::isDigit))
      return fail("--cuda-arch expects compute capabilities such as 80,90, "
                  "got '" +
                  arch + "'");
  if (cpus.getNumOccurrences() == 0)
    cpus = llvm::hardware_concurrency().compute_thread_count();
  else if (cpus == 0)
    return fail("--cpus expects a positive number of CPUs");
  for (const std::string &dtype : dtypeList)
    if (!llvm::is_contained(fp::codegen::knownDTypes(), dtype))
      return fail("--dtypes expects element types among f32, f64 and bf16, "
                  "got '" +
                  dtype + "'");

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
    if (!outputFile.empty() && outputFile != "-")
      return failed(writeFile(outputFile, text)) ? 1 : 0;
    llvm::outs() << text;
    llvm::outs().flush();
    return llvm::outs().has_error() ? fail("cannot write to stdout") : 0;
  };

  fp::frontend::FrontendOptions options;
  options.includeDirs.assign(includeDirs.begin(), includeDirs.end());
  options.elementType = elementType;
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

  const bool withCuda = target != Target::CPU || emit == EmitStage::Cuda;
  auto lower = [&](ModuleOp lowering, bool fuseScans,
                   bool chunked) -> LogicalResult {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    fp::FpPipelineOptions pipelineOptions;
    pipelineOptions.fuse = !noFuse;
    pipelineOptions.fuseScans = fuseScans;
    pipelineOptions.transposeScanA = !noTransposeScanA;
    pipelineOptions.backward = withBackward;
    pipelineOptions.saveProducts = saveProducts;
    pipelineOptions.stageInputs = !noStageInputs;
    pipelineOptions.chunked = chunked;
    fp::buildFpPipeline(pm, pipelineOptions);
    return pm.run(lowering);
  };
  // The split schedule, lowered from a copy of the parsed module, where
  // CUDA code is compiled and it differs from the fused one.
  OwningOpRef<ModuleOp> splitModule;
  const bool fusedScans = !noFuse && !noFuseScans;
  if (withCuda && fusedScans && !noSplitSchedule &&
      emit != EmitStage::Lowered) {
    splitModule = module->clone();
    if (failed(lower(*splitModule, /*fuseScans=*/false, !noChunked)))
      return 1;
  }
  if (failed(lower(*module, fusedScans, !noChunked)))
    return 1;
  std::string lowered = printed(*module);
  if (failed(dump(".2-lowered.mlir", lowered)))
    return 1;
  if (emit == EmitStage::Lowered)
    return emitText(lowered);
  if (splitModule) {
    std::string split = printed(*splitModule);
    if (split == lowered)
      splitModule = nullptr;
    else if (failed(dump(".2-lowered-split.mlir", split)))
      return 1;
  }

  fp::codegen::LibraryInfo info;
  info.source = inputFile;
  info.cudaExpf = !noCudaExpf;
  info.schedule = noFuse ? "unfused" : noFuseScans ? "split" : "fused";
  info.splitModule = splitModule ? *splitModule : ModuleOp();
  if (!dtypeList.empty())
    info.dtypes.assign(dtypeList.begin(), dtypeList.end());
  if (target == Target::CUDA)
    info.targets = {"cuda"};
  else if (target == Target::All)
    info.targets = {"cpu", "cuda"};
  std::string deviceSource;
  if (withCuda) {
    llvm::raw_string_ostream os(deviceSource);
    if (failed(fp::codegen::emitDeviceSource(*module, info, os)))
      return 1;
    if (failed(dump(".cuda.cu", deviceSource)))
      return 1;
  }
  if (emit == EmitStage::Cuda)
    return emitText(deviceSource);
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

  // The string fp_model_manifest() returns, from the same builder.
  FailureOr<std::vector<fp::codegen::LayerPlan>> plans =
      fp::codegen::planLayers(*module);
  if (failed(plans))
    return 1;
  std::vector<fp::codegen::LayerPlan> splitPlans;
  if (splitModule) {
    FailureOr<std::vector<fp::codegen::LayerPlan>> planned =
        fp::codegen::planLayers(*splitModule);
    if (failed(planned))
      return 1;
    splitPlans = std::move(*planned);
  }
  FailureOr<std::string> manifest =
      fp::codegen::buildManifest(*module, *plans, info, splitPlans);
  if (failed(manifest))
    return 1;
  if (emit == EmitStage::Manifest)
    return emitText(*manifest + "\n");

  std::string output = outputFile;
  if (output.empty())
    output = stem + ".so";
  if (output == "-")
    return fail("a shared library cannot be written to stdout; pass -o "
                "<file>.so");
  if (failed(refuseOverwritingInput(output)))
    return 1;
  return buildLibrary(hostSource, target == Target::CPU ? "" : deviceSource,
                      fp::codegen::cudaParts(info), *manifest, output);
}
