//===- fp-tokenize.cpp - Text to a token directory, once --------*- C++ -*-===//
//
// Tokenises text files the way fp-train --task lm reads them (documents as
// `EOS text EOS`, the byte-level tokenizer or GPT-2's BPE; JSON lines'
// "text") and writes a token directory: train.bin and val.bin, bare
// little-endian ids (uint16, nanoGPT's layout, or uint32 for a vocabulary
// over 65,536), and meta.json, which tells fp-train what the ids are. The
// validation split is the one fp-train holds out of the same text (the
// stream's last --val-fraction), the last --val-tokens, or --val-data's
// files, so a run on the directory reads the blocks a run on the text would,
// without tokenising at every start and resume.
//
// Text streams through: documents are read one at a time, tokenised in
// batches on --threads threads and written in order, so memory holds a few
// batches, not the corpus (a file without --doc-sep is one document, held
// whole). The held-out end is moved from train.bin's temporary into val.bin's
// once the stream's length is known.
//
// Every file is written to a temporary name and renamed into place; meta.json
// comes last (an existing one is removed first), so a directory with a
// meta.json is whole, and fp-train checks the token counts it records.
//
// Exit status: 0 done; 1 an error while writing; 2 a bad command line or bad
// input (one line on stderr).
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/TextDocuments.h"
#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Train/CommandLine.h"
#include "fp/Runtime/Train/ToolArguments.h"
#include "fp/Runtime/Train/Trainer.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace fp::rt;
namespace fs = std::filesystem;

namespace {

constexpr const char *kUsage =
    "usage: fp-tokenize TEXT... --out DIR [--tokenizer DIR] [--doc-sep TEXT]\n"
    "                   [--val-fraction F | --val-tokens N | --val-data "
    "TEXT,...]\n"
    "                   [--threads N] [--force]\n"
    "\n"
    "Tokenises text files once into a token directory for\n"
    "fp-train --task lm --data DIR: train.bin and val.bin (bare little-endian\n"
    "ids, uint16 as nanoGPT's, uint32 for a vocabulary over 65536) and\n"
    "meta.json (docs/tasks.md, lm). The split is the one fp-train makes of\n"
    "the same text. A file whose name ends in .jsonl holds a JSON object a\n"
    "line, whose \"text\" is a document.\n"
    "\n"
    "  --out DIR            the directory to write (made if missing)\n"
    "  --tokenizer DIR      GPT-2's BPE files (vocab.json and merges.txt, or\n"
    "                       encoder.json and vocab.bpe) [default: the\n"
    "                       byte-level tokenizer]\n"
    "  --doc-sep TEXT       a line holding exactly TEXT ends a document\n"
    "                       (\"%\" in fortune files) [default: a document a "
    "file]\n"
    "  --val-fraction F     the share of the stream's end held out for\n"
    "                       validation [default: 0.05]\n"
    "  --val-tokens N       hold out the stream's last N tokens instead\n"
    "  --val-data TEXT,...  text files to tokenise into val.bin instead\n"
    "  --threads N          threads that tokenise [default: the CPUs]\n"
    "  --force              replace train.bin, val.bin and meta.json in DIR\n";

struct Options {
  std::vector<fs::path> texts;
  std::vector<fs::path> validationTexts;
  fs::path out;
  fs::path tokenizer;
  std::string documentSeparator;
  double validationFraction = kDefaultValidationFraction;
  int64_t validationTokens = 0;
  unsigned threads = 0;
  bool force = false;
};

[[noreturn]] void usage(const std::string &message) {
  throw UsageError(message);
}

std::vector<fs::path> commaSeparated(const std::string &flag,
                                     const std::string &text) {
  std::vector<fs::path> paths;
  for (const std::string &path : splitAtCommas(text)) {
    if (path.empty())
      usage(fmt::format("--{}: an empty file name in '{}'", flag, text));
    paths.emplace_back(path);
  }
  return paths;
}

Options parse(const std::vector<std::string> &args, bool &help) {
  Options options;
  int validationFlags = 0;
  ToolArguments arguments(args);
  while (arguments.next()) {
    if (arguments.isHelp()) {
      help = true;
      return options;
    }
    const std::string &flag = arguments.flag();
    if (flag.empty()) {
      options.texts.emplace_back(arguments.argument());
    } else if (flag == "out") {
      options.out = arguments.value();
    } else if (flag == "tokenizer") {
      options.tokenizer = arguments.value();
      if (options.tokenizer.empty())
        usage("--tokenizer: an empty path");
    } else if (flag == "doc-sep") {
      options.documentSeparator = arguments.value();
    } else if (flag == "val-fraction") {
      options.validationFraction = arguments.number(
          [](double x) { return x > 0 && x < 1; }, "in (0, 1)");
      ++validationFlags;
    } else if (flag == "val-tokens") {
      options.validationTokens = arguments.integer(1);
      ++validationFlags;
    } else if (flag == "val-data") {
      options.validationTexts = commaSeparated(flag, arguments.value());
      ++validationFlags;
    } else if (flag == "threads") {
      options.threads = unsigned(arguments.integer(1));
    } else if (flag == "force") {
      options.force = true;
    } else {
      usage(fmt::format("unknown flag '--{}' (fp-tokenize --help lists them)",
                        flag));
    }
  }
  if (options.texts.empty())
    usage("give the text files to tokenise");
  if (options.out.empty())
    usage("--out is required: the directory to write train.bin, val.bin "
          "and meta.json into");
  if (validationFlags > 1)
    usage("give one of --val-fraction, --val-tokens and --val-data");
  if (options.threads == 0)
    options.threads = std::max(1U, std::thread::hardware_concurrency());
  return options;
}

/// The files fp-tokenize writes into `out`.
struct OutputFiles {
  fs::path train, validation, meta;
  explicit OutputFiles(const fs::path &out)
      : train(out / "train.bin"), validation(out / "val.bin"),
        meta(out / TokenDirectoryMeta::kFileName) {}
};

/// Refuses, before any work, to replace the token files in `out` unless
/// --force, and text files that are not there.
void checkOptions(const Options &options, const OutputFiles &files) {
  std::error_code error;
  if (fs::exists(options.out, error) && !fs::is_directory(options.out, error))
    usage(fmt::format("--out '{}': not a directory", options.out.string()));
  if (!options.force)
    for (const fs::path &path : {files.train, files.validation, files.meta})
      if (fs::exists(path, error))
        usage(fmt::format("'{}' exists; give --force to replace it",
                          path.string()));
  for (const std::vector<fs::path> *list :
       {&options.texts, &options.validationTexts})
    for (const fs::path &path : *list)
      if (!fs::is_regular_file(path, error))
        throw DataError(fmt::format(
            "'{}': {}", path.string(),
            fs::exists(path, error) ? "not a regular file" : "no such file"));
}

/// `directory`, made where missing and removed again, if still empty,
/// unless kept(): a refused run leaves no directory behind.
class OutputDirectory {
public:
  explicit OutputDirectory(fs::path directory) : path(std::move(directory)) {
    std::error_code error;
    made = fs::create_directories(path, error);
    if (error)
      throw std::runtime_error(
          fmt::format("cannot make '{}': {}", path.string(), error.message()));
  }
  ~OutputDirectory() {
    std::error_code error;
    if (made && !keep && fs::is_empty(path, error))
      fs::remove(path, error);
  }
  OutputDirectory(const OutputDirectory &) = delete;
  OutputDirectory &operator=(const OutputDirectory &) = delete;
  void kept() { keep = true; }

private:
  fs::path path;
  bool made = false, keep = false;
};

/// A bare little-endian token file of `width`-byte ids, written to
/// `path`.tmp and renamed to `path` by commit(); the temporary is removed
/// if it is not committed. Every failure is a std::runtime_error naming the
/// file and the reason.
class TokenFileWriter {
public:
  TokenFileWriter(fs::path path, int width)
      : path(std::move(path)), temporary(this->path.string() + ".tmp"),
        width(width) {
    fd =
        ::open(temporary.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
      fail(std::strerror(errno));
    buffer.reserve(kBufferBytes);
  }
  ~TokenFileWriter() {
    if (fd >= 0)
      ::close(fd);
    std::error_code error;
    if (!committed)
      fs::remove(temporary, error);
  }
  TokenFileWriter(const TokenFileWriter &) = delete;
  TokenFileWriter &operator=(const TokenFileWriter &) = delete;

  void append(const std::vector<uint32_t> &ids) {
    const size_t at = buffer.size();
    buffer.resize(at + ids.size() * size_t(width));
    char *out = buffer.data() + at;
    for (uint32_t id : ids)
      for (int byte = 0; byte < width; ++byte)
        *out++ = char((id >> (8 * byte)) & 0xff);
    count += int64_t(ids.size());
    if (buffer.size() >= kBufferBytes)
      flush();
  }
  /// Ids written.
  int64_t size() const { return count; }

  /// Moves the last `tail` ids to the end of `other`.
  void moveTail(int64_t tail, TokenFileWriter &other) {
    flush();
    const off_t keep = off_t(count - tail) * width;
    std::vector<char> chunk(kBufferBytes);
    for (off_t at = keep; at < off_t(count) * width;) {
      ssize_t got = ::pread(fd, chunk.data(), chunk.size(), at);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        fail(got < 0 ? std::strerror(errno) : "ended early");
      other.appendBytes(chunk.data(), size_t(got));
      at += got;
    }
    other.count += tail;
    if (::ftruncate(fd, keep) != 0)
      fail(std::strerror(errno));
    count -= tail;
  }

  /// Writes what is buffered and syncs the file to disk.
  void finish() {
    flush();
    if (::fsync(fd) != 0)
      fail(std::strerror(errno));
  }
  /// Renames the finished temporary to the file.
  void commit() {
    if (::close(fd) != 0) {
      fd = -1;
      fail(std::strerror(errno));
    }
    fd = -1;
    std::error_code error;
    fs::rename(temporary, path, error);
    if (error)
      fail(error.message());
    committed = true;
  }

private:
  static constexpr size_t kBufferBytes = size_t(1) << 20;

  [[noreturn]] void fail(const std::string &reason) const {
    throw std::runtime_error(
        fmt::format("cannot write '{}': {}", temporary.string(), reason));
  }
  void appendBytes(const char *bytes, size_t size) {
    buffer.insert(buffer.end(), bytes, bytes + size);
    if (buffer.size() >= kBufferBytes)
      flush();
  }
  void flush() {
    const char *data = buffer.data();
    size_t left = buffer.size();
    while (left > 0) {
      ssize_t written = ::write(fd, data, left);
      if (written < 0 && errno == EINTR)
        continue;
      if (written < 0)
        fail(std::strerror(errno));
      data += written;
      left -= size_t(written);
    }
    buffer.clear();
  }

  fs::path path, temporary;
  int width;
  int fd = -1;
  std::vector<char> buffer;
  int64_t count = 0;
  bool committed = false;
};

/// Encodes the documents of text files on several threads, handing their
/// ids on in document order, with a line of progress per file (and every
/// ten seconds within a long one).
class StreamTokenizer {
public:
  StreamTokenizer(const BpeTokenizer *bpe, std::string separator,
                  unsigned threads)
      : bpe(bpe), separator(std::move(separator)), threads(threads) {}

  /// Appends the ids of `paths`' documents to `sink`; returns the
  /// documents. Throws DataError for bad text.
  int64_t run(const std::vector<fs::path> &paths, TokenFileWriter &sink);

private:
  /// About this much text is tokenised in one piece of work.
  static constexpr size_t kBatchBytes = size_t(4) << 20;

  struct Batch {
    std::vector<std::string> documents;
    size_t bytes = 0;
    /// The batch ends the file of this index.
    int64_t endsFile = -1;
  };
  struct Done {
    std::vector<uint32_t> ids;
    int64_t endsFile = -1;
  };

  Done encode(const Batch &batch);

  const BpeTokenizer *bpe;
  std::string separator;
  unsigned threads;
  /// Caches not in use; a batch takes one and gives it back.
  std::mutex cachesMutex;
  std::vector<std::unique_ptr<BpeTokenizer::Cache>> caches;
};

StreamTokenizer::Done StreamTokenizer::encode(const Batch &batch) {
  std::unique_ptr<BpeTokenizer::Cache> cache;
  {
    std::lock_guard<std::mutex> lock(cachesMutex);
    if (!caches.empty()) {
      cache = std::move(caches.back());
      caches.pop_back();
    }
  }
  if (!cache)
    cache = std::make_unique<BpeTokenizer::Cache>();
  Done done{{}, batch.endsFile};
  if (!bpe)
    done.ids.reserve(batch.bytes + 2 * batch.documents.size());
  std::vector<int64_t> ids;
  for (const std::string &document : batch.documents) {
    ids.clear();
    appendDocumentIds(document, bpe, cache.get(), ids);
    done.ids.insert(done.ids.end(), ids.begin(), ids.end());
  }
  {
    std::lock_guard<std::mutex> lock(cachesMutex);
    caches.push_back(std::move(cache));
  }
  return done;
}

int64_t StreamTokenizer::run(const std::vector<fs::path> &paths,
                             TokenFileWriter &sink) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  };
  std::vector<int64_t> documents(paths.size(), 0), fileIds(paths.size(), 0);
  std::vector<Clock::time_point> started(paths.size());
  std::deque<std::future<Done>> pending;
  int64_t file = 0;
  // Takes the oldest batch's ids (waiting for them), and reports a file
  // whose last batch it was.
  auto takeOldest = [&] {
    Done done = pending.front().get();
    pending.pop_front();
    sink.append(done.ids);
    fileIds[size_t(file)] += int64_t(done.ids.size());
    if (done.endsFile >= 0) {
      const fs::path &path = paths[size_t(done.endsFile)];
      std::error_code error;
      const auto bytes = fs::file_size(path, error);
      fmt::print(stderr,
                 "'{}': {} documents, {} bytes, {} tokens in {:.2f} s\n",
                 path.string(), documents[size_t(done.endsFile)],
                 error ? 0 : bytes, fileIds[size_t(done.endsFile)],
                 seconds(started[size_t(done.endsFile)]));
      ++file;
    }
  };
  auto submit = [&](Batch batch) {
    // One thread: the work is done when its ids are taken, in this thread.
    const auto policy =
        threads > 1 ? std::launch::async : std::launch::deferred;
    pending.push_back(std::async(
        policy, [this, work = std::move(batch)] { return encode(work); }));
    while (pending.size() >= std::max(1U, threads))
      takeOldest();
  };

  Batch batch;
  std::string document;
  for (size_t index = 0; index < paths.size(); ++index) {
    started[index] = Clock::now();
    Clock::time_point lastNote = started[index];
    TextDocuments text(paths[index], separator);
    while (text.next(document)) {
      batch.bytes += document.size();
      batch.documents.push_back(std::move(document));
      ++documents[index];
      if (batch.bytes >= kBatchBytes) {
        submit(std::exchange(batch, Batch{}));
        if (seconds(lastNote) >= 10) {
          fmt::print(stderr, "'{}': {} MB read, {} tokens so far\n",
                     paths[index].string(), text.bytesRead() >> 20,
                     sink.size());
          lastNote = Clock::now();
        }
      }
    }
    if (documents[index] == 0)
      throw DataError(
          fmt::format("'{}': holds no text", paths[index].string()));
    batch.endsFile = int64_t(index);
    submit(std::exchange(batch, Batch{}));
  }
  while (!pending.empty())
    takeOldest();
  int64_t total = 0;
  for (int64_t count : documents)
    total += count;
  return total;
}

int run(const std::vector<std::string> &args) {
  bool help = false;
  Options options = parse(args, help);
  if (help) {
    fmt::print("{}", kUsage);
    return 0;
  }
  std::shared_ptr<const BpeTokenizer> bpe;
  if (!options.tokenizer.empty()) {
    try {
      bpe = BpeTokenizer::open(options.tokenizer);
    } catch (const DataError &error) {
      usage(fmt::format("--tokenizer: {}", error.what()));
    }
  }
  const OutputFiles files(options.out);
  checkOptions(options, files);

  TokenDirectoryMeta meta;
  meta.vocabSize = bpe ? bpe->vocabSize() : kByteVocabSize;
  meta.tokenBytes = meta.vocabSize > (int64_t(1) << 16) ? 4 : 2;
  meta.tokenizer = bpe ? TokenDirectoryMeta::Tokenizer::Gpt2Bpe
                       : TokenDirectoryMeta::Tokenizer::ByteLevel;
  if (bpe)
    meta.tokenizerDirectory = fs::absolute(options.tokenizer).string();
  for (const std::vector<fs::path> *list :
       {&options.texts, &options.validationTexts})
    for (const fs::path &path : *list)
      meta.sources.push_back(path.string());
  meta.documentSeparator = options.documentSeparator;

  OutputDirectory directory(options.out);
  TokenFileWriter train(files.train, meta.tokenBytes);
  TokenFileWriter validation(files.validation, meta.tokenBytes);
  StreamTokenizer tokenizer(bpe.get(), options.documentSeparator,
                            options.threads);
  meta.documents = tokenizer.run(options.texts, train);
  if (!options.validationTexts.empty()) {
    meta.documents += tokenizer.run(options.validationTexts, validation);
  } else {
    const int64_t held =
        options.validationTokens > 0
            ? std::min(options.validationTokens, train.size())
            : CorpusSplit::heldOut(train.size(), options.validationFraction);
    if (held == train.size())
      throw DataError(fmt::format(
          "the text holds {} tokens; nothing is left for training after "
          "holding out {} for validation",
          train.size(), held));
    train.moveTail(held, validation);
  }
  train.finish();
  validation.finish();
  meta.trainTokens = train.size();
  meta.validationTokens = validation.size();

  // meta.json describes the files beside it: gone before they change,
  // written once they are whole.
  std::error_code error;
  fs::remove(files.meta, error);
  if (error)
    throw std::runtime_error(fmt::format("cannot remove '{}': {}",
                                         files.meta.string(), error.message()));
  directory.kept();
  train.commit();
  validation.commit();
  writeFileAtomically(files.meta, meta.toJson());

  fmt::print(stderr,
             "wrote '{}': train.bin {} tokens, val.bin {} tokens, "
             "vocabulary {} ({}, uint{}, {} documents)\n",
             options.out.string(), meta.trainTokens, meta.validationTokens,
             meta.vocabSize, TokenDirectoryMeta::name(meta.tokenizer),
             8 * meta.tokenBytes, meta.documents);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return runTool("fp-tokenize", [&] { return run(args); });
}
