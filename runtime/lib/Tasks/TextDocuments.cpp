//===- TextDocuments.cpp - The documents of a text file, streamed -*- C++
//-*-===//
//
// Lines are read with std::getline, whose end-of-file state tells whether the
// last line ended in '\n', so that a document of separated text holds exactly
// the bytes between its separator lines.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Tasks/TextDocuments.h"

#include "DataFiles.h"

#include "fp/Runtime/Tasks/TokenCorpus.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

namespace fp::rt {

using detail::quoted;

TextDocuments::TextDocuments(std::filesystem::path path, std::string separator)
    : file(std::move(path)), separator(std::move(separator)),
      jsonLines(isJsonLines(file)) {
  detail::requireRegularFile(file);
  if (jsonLines && !this->separator.empty())
    throw DataError(fmt::format("{}: JSON lines hold a document a line; a "
                                "document separator does not apply",
                                quoted(file)));
  in.open(file, std::ios::binary);
  if (!in)
    throw DataError(
        fmt::format("{}: cannot open: {}", quoted(file), std::strerror(errno)));
}

bool TextDocuments::isJsonLines(const std::filesystem::path &path) {
  return path.extension() == ".jsonl";
}

bool TextDocuments::next(std::string &document) {
  if (done)
    return false;
  if (jsonLines)
    return nextJsonLine(document);
  return separator.empty() ? nextWhole(document) : nextSeparated(document);
}

bool TextDocuments::readLine(std::string &text, bool &newline) {
  if (!std::getline(in, text)) {
    if (in.bad())
      throw DataError(fmt::format("{}: cannot read", quoted(file)));
    return false;
  }
  ++lineNumber;
  newline = !in.eof();
  consumed += text.size() + (newline ? 1 : 0);
  return true;
}

bool TextDocuments::nextWhole(std::string &document) {
  done = true;
  document.clear();
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0)
    document.append(buffer, size_t(in.gcount()));
  if (in.bad())
    throw DataError(fmt::format("{}: cannot read", quoted(file)));
  consumed = document.size();
  return !document.empty();
}

bool TextDocuments::nextSeparated(std::string &document) {
  document.clear();
  bool newline = false;
  while (readLine(line, newline)) {
    if (line == separator) {
      if (!document.empty())
        return true;
      continue;
    }
    document += line;
    if (newline)
      document += '\n';
  }
  done = true;
  return !document.empty();
}

bool TextDocuments::nextJsonLine(std::string &document) {
  bool newline = false;
  while (readLine(line, newline)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    nlohmann::json json =
        nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const char *problem = nullptr;
    if (json.is_discarded())
      problem = "not valid JSON";
    else if (!json.is_object())
      problem = "not a JSON object";
    else if (!json.contains("text"))
      problem = "no \"text\" field";
    else if (!json["text"].is_string())
      problem = "its \"text\" is not a string";
    if (problem)
      throw DataError(
          fmt::format("{}:{}: {}", quoted(file), lineNumber, problem));
    document = json["text"].get<std::string>();
    if (!document.empty())
      return true;
  }
  done = true;
  return false;
}

void appendDocumentIds(std::string_view document, const BpeTokenizer *bpe,
                       BpeTokenizer::Cache *cache, std::vector<int64_t> &ids) {
  const int64_t eos = bpe ? bpe->eos() : kByteEos;
  ids.push_back(eos);
  if (!bpe) {
    for (char byte : document)
      ids.push_back(static_cast<unsigned char>(byte));
  } else if (cache) {
    bpe->encode(document, ids, *cache);
  } else {
    bpe->encode(document, ids);
  }
  ids.push_back(eos);
}

} // namespace fp::rt
