//===- TokenCorpusTest.cpp - Token files, text and LM blocks ----*- C++ -*-===//
//
// Files written here in each layout TokenCorpus reads (llm.c's header with
// uint16 and uint32 ids, bare ids, text with and without document
// separators, JSON lines) read back id for id, and text's documents are the
// bytes between separator lines or JSON lines' "text", read a document at a
// time; every malformed file is refused with a
// message naming it and the problem; BlockSampler's blocks are the shifted
// cuts of the stream, and its training order visits every block once per
// epoch, the same for the same seed.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/TokenCorpus.h"
#include "fp/Runtime/Tasks/TextDocuments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <unistd.h>

using namespace fp::rt;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

/// A file under the temporary directory, removed at the end.
struct TempFile {
  explicit TempFile(const std::string &name)
      : path(fs::temp_directory_path() /
             ("fp-corpus-test-" + std::to_string(::getpid()) + "-" + name)) {}
  ~TempFile() { fs::remove(path); }
  void write(const std::string &bytes) const {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  fs::path path;
};

void appendLittleEndian(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((value >> (8 * i)) & 0xff));
}

/// llm.c's layout: 256 int32 (magic, version, count, zeros), then the ids.
std::string llmcFile(const std::vector<uint32_t> &ids, int width,
                     int64_t declared = -1) {
  std::string out;
  appendLittleEndian(out, width == 2 ? 20240520 : 20240801, 4);
  appendLittleEndian(out, width == 2 ? 1 : 7, 4);
  appendLittleEndian(
      out, uint64_t(declared < 0 ? int64_t(ids.size()) : declared), 4);
  out.resize(256 * 4, '\0');
  for (uint32_t id : ids)
    appendLittleEndian(out, id, width);
  return out;
}

std::vector<int64_t> idsOf(const TokenCorpus &corpus) {
  torch::Tensor all = corpus.slice(0, corpus.size());
  return std::vector<int64_t>(all.data_ptr<int64_t>(),
                              all.data_ptr<int64_t>() + all.numel());
}

std::string openError(const fs::path &path, const CorpusOptions &options) {
  try {
    TokenCorpus::open(path, options);
  } catch (const DataError &error) {
    return error.what();
  }
  return "(opened)";
}

CorpusOptions tokens(int64_t vocab, int width = 2) {
  CorpusOptions options;
  options.format = CorpusOptions::Format::Tokens;
  options.vocabSize = vocab;
  options.tokenBytes = width;
  return options;
}

TEST(TokenCorpus, ReadsLlmcFilesOfBothWidths) {
  TempFile narrow("narrow.bin"), wide("wide.bin");
  narrow.write(llmcFile({0, 7, 50256, 3}, 2));
  wide.write(llmcFile({0, 128255, 70000}, 4));
  auto a = TokenCorpus::open(narrow.path, tokens(50257));
  EXPECT_EQ(idsOf(*a), (std::vector<int64_t>{0, 7, 50256, 3}));
  EXPECT_EQ(a->description(), "token file (llm.c header, uint16)");
  auto b = TokenCorpus::open(wide.path, tokens(128256));
  EXPECT_EQ(idsOf(*b), (std::vector<int64_t>{0, 128255, 70000}));
  EXPECT_EQ(b->description(), "token file (llm.c header, uint32)");
}

TEST(TokenCorpus, ReadsBareIds) {
  TempFile file("bare.bin");
  std::string bytes;
  for (uint32_t id : {5u, 65535u, 1u})
    appendLittleEndian(bytes, id, 2);
  file.write(bytes);
  CorpusOptions options = tokens(65536);
  options.format = CorpusOptions::Format::Auto; // by the ".bin" name
  auto corpus = TokenCorpus::open(file.path, options);
  EXPECT_EQ(idsOf(*corpus), (std::vector<int64_t>{5, 65535, 1}));
  EXPECT_EQ(corpus->description(), "token file (bare, uint16)");
}

TEST(TokenCorpus, TextIsBytesInEosWrappedDocuments) {
  TempFile file("fortunes.txt");
  file.write("ab\n%\nc\n%\n");
  CorpusOptions whole;
  auto one = TokenCorpus::open(file.path, whole);
  EXPECT_EQ(one->vocabSize(), kByteVocabSize);
  std::vector<int64_t> expected = {256, 'a',  'b', '\n', '%', '\n',
                                   'c', '\n', '%', '\n', 256};
  EXPECT_EQ(idsOf(*one), expected);
  EXPECT_EQ(one->description(), "text, byte-level (1 document)");

  CorpusOptions split;
  split.documentSeparator = "%";
  auto two = TokenCorpus::open(file.path, split);
  EXPECT_EQ(idsOf(*two), (std::vector<int64_t>{256, 'a', 'b', '\n', 256, 256,
                                               'c', '\n', 256}));
  EXPECT_EQ(two->description(), "text, byte-level (2 documents)");
}

std::vector<std::string> documentsOf(const fs::path &path,
                                     const std::string &separator) {
  TextDocuments documents(path, separator);
  std::vector<std::string> all;
  std::string document;
  while (documents.next(document))
    all.push_back(document);
  EXPECT_EQ(documents.bytesRead(), fs::file_size(path));
  return all;
}

std::string documentsError(const fs::path &path, const std::string &separator) {
  try {
    documentsOf(path, separator);
  } catch (const DataError &error) {
    return error.what();
  }
  return "(read)";
}

// A document is the bytes between separator lines, newlines included, to
// the last byte of a file that does not end in one; empty ones are left
// out, a blank line is a document; lines that hold more than the separator
// separate nothing.
TEST(TextDocuments, SeparatedDocumentsAreTheBytesBetweenSeparatorLines) {
  TempFile file("separated.txt");
  file.write("%\nab\n%\n%\n\n%\nx%\n%%\n %\nc");
  using Documents = std::vector<std::string>;
  EXPECT_EQ(documentsOf(file.path, "%"),
            (Documents{"ab\n", "\n", "x%\n%%\n %\nc"}));
  EXPECT_EQ(documentsOf(file.path, ""),
            (Documents{"%\nab\n%\n%\n\n%\nx%\n%%\n %\nc"}));
  file.write("a\n%\n");
  EXPECT_EQ(documentsOf(file.path, "%"), (Documents{"a\n"}));
  file.write("%\n%\n");
  EXPECT_EQ(documentsOf(file.path, "%"), (Documents{}));
  file.write("");
  EXPECT_EQ(documentsOf(file.path, ""), (Documents{}));
}

TEST(TextDocuments, JsonLinesGiveEachLinesText) {
  TempFile file("lines.jsonl");
  file.write("\n{\"text\": \"a\\u00e9\"}\n  \n{\"text\": \"\"}\r\n"
             "{\"id\": 2, \"text\": \"b\\nc\"}");
  EXPECT_EQ(documentsOf(file.path, ""),
            (std::vector<std::string>{"a\xc3\xa9", "b\nc"}));

  // A TokenCorpus reads the same documents.
  auto corpus = TokenCorpus::open(file.path, CorpusOptions());
  EXPECT_EQ(idsOf(*corpus), (std::vector<int64_t>{256, 'a', 0xc3, 0xa9, 256,
                                                  256, 'b', '\n', 'c', 256}));
  EXPECT_EQ(corpus->documents(), 2);

  const std::string name = "'" + file.path.string() + "'";
  for (auto [content, problem] :
       std::vector<std::pair<std::string, std::string>>{
           {"{\"text\": \"a\"}\n{\"text\": 3}\n",
            ":2: its \"text\" is not a string"},
           {"{\"text\": \"a\"}\n\n[1]\n", ":3: not a JSON object"},
           {"{\"txt\": \"a\"}\n", ":1: no \"text\" field"},
           {"{\"text\": \"a\"\n", ":1: not valid JSON"},
           {"{\"text\": \"\xff\"}\n", ":1: not valid JSON"}}) {
    file.write(content);
    EXPECT_EQ(documentsError(file.path, ""), name + problem) << content;
  }
  EXPECT_THAT(documentsError(file.path, "%"),
              HasSubstr("a document separator does not apply"));
  EXPECT_EQ(documentsError(file.path.string() + ".absent", ""),
            name.substr(0, name.size() - 1) + ".absent': no such file");
}

TEST(TokenCorpus, RefusesMalformedFilesNamingThem) {
  TempFile odd("odd.bin"), header("header.bin"), high("high.bin"),
      empty("empty.bin"), emptyText("empty.txt");
  odd.write(std::string(7, '\1'));
  header.write(llmcFile({1, 2, 3}, 2, /*declared=*/5));
  high.write(llmcFile({1, 99}, 2));
  empty.write("");
  emptyText.write("");
  auto expectError = [](const fs::path &path, const CorpusOptions &options,
                        const std::string &problem) {
    std::string message = openError(path, options);
    EXPECT_THAT(message, HasSubstr("'" + path.string() + "'"));
    EXPECT_THAT(message, HasSubstr(problem));
  };
  expectError(odd.path, tokens(10),
              "7 bytes is not a whole number of 2-byte tokens");
  expectError(header.path, tokens(10),
              "the header declares 5 tokens of 2 bytes, but 6 bytes follow");
  expectError(high.path, tokens(50),
              "token 99 (at index 1) is not below the vocabulary size 50");
  expectError(empty.path, tokens(10), "holds no tokens");
  expectError(emptyText.path, CorpusOptions(), "holds no text");
  expectError(odd.path, tokens(0), "needs its vocabulary size");
  expectError(fs::temp_directory_path() / "fp-corpus-test-missing.bin",
              tokens(10), "no such file");
}

TEST(BlockSampler, BlocksAreShiftedCutsOfTheStream) {
  TempFile file("blocks.bin");
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 23; ++i)
    ids.push_back(i);
  file.write(llmcFile(ids, 2));
  BlockSampler sampler(TokenCorpus::open(file.path, tokens(100)), 4);
  EXPECT_EQ(sampler.blocks(), 4); // 23 ids: four blocks of 5, 3 left over
  auto [inputs, targets] = sampler.block(2);
  EXPECT_TRUE(torch::equal(inputs, torch::tensor({10, 11, 12, 13})));
  EXPECT_TRUE(torch::equal(targets, torch::tensor({11, 12, 13, 14})));

  EXPECT_THAT(
      [&] {
        try {
          BlockSampler(TokenCorpus::open(file.path, tokens(100)), 23);
        } catch (const DataError &error) {
          return std::string(error.what());
        }
        return std::string();
      }(),
      HasSubstr("23 tokens hold no block of context 23 + 1"));
}

TEST(BlockSampler, TrainingOrderVisitsEveryBlockOncePerEpoch) {
  TempFile file("order.bin");
  for (int64_t blocks : {1, 2, 3, 7, 64, 1000}) {
    SCOPED_TRACE("blocks " + std::to_string(blocks));
    file.write(llmcFile(std::vector<uint32_t>(size_t(blocks) * 3, 1u), 2));
    BlockSampler sampler(TokenCorpus::open(file.path, tokens(2)), 2);
    ASSERT_EQ(sampler.blocks(), blocks);
    const int64_t batch = 5;
    std::vector<int64_t> firstEpoch, secondEpoch;
    for (int64_t position = 0; position < 2 * blocks; ++position) {
      int64_t block =
          sampler.trainBlock(11, position / batch, batch, position % batch);
      ASSERT_GE(block, 0);
      ASSERT_LT(block, blocks);
      (position < blocks ? firstEpoch : secondEpoch).push_back(block);
      // A pure function of its arguments.
      EXPECT_EQ(block, sampler.trainBlock(11, position / batch, batch,
                                          position % batch));
    }
    EXPECT_EQ(std::set<int64_t>(firstEpoch.begin(), firstEpoch.end()).size(),
              size_t(blocks));
    EXPECT_EQ(std::set<int64_t>(secondEpoch.begin(), secondEpoch.end()).size(),
              size_t(blocks));
    if (blocks >= 64) {
      EXPECT_NE(firstEpoch, secondEpoch) << "epochs are shuffled apart";
      std::vector<int64_t> other;
      for (int64_t position = 0; position < blocks; ++position)
        other.push_back(sampler.trainBlock(12, position, 1, 0));
      EXPECT_NE(firstEpoch, other) << "seeds give other orders";
    }
  }
}

} // namespace
