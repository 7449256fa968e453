//===- Manifest.cpp - Parse and validate a model manifest -------*- C++ -*-===//
//
// Parses the JSON manifest of a model library into the structs of
// Manifest.h. Validation is complete: every required field is present and
// well typed, strings from closed sets are known, sizes are positive, names
// are unique and cross references resolve. Errors name the offending field by
// its path in the document ("layers[0].solver.tolerance"). Unknown keys are
// ignored.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/Manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace fp::rt;
using Json = nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// Node: a JSON value and its path, with checked accessors
//===----------------------------------------------------------------------===//

/// A short rendering of a JSON value for messages: scalars as written,
/// containers by their kind.
std::string describe(const Json &value) {
  switch (value.type()) {
  case Json::value_t::object:
    return "an object";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::null:
    return "null";
  default: {
    std::string text = value.dump();
    if (text.size() > 40)
      text = text.substr(0, 37) + "...";
    return text;
  }
  }
}

/// A JSON value together with its path in the document. Every accessor
/// checks the type (and range) it promises and throws a ManifestError naming
/// the path otherwise.
class Node {
public:
  Node(const Json &value, std::string path)
      : value(value), path(std::move(path)) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw ManifestError("field '" + path + "' " + what);
  }

  const Json &json() const { return value; }
  const std::string &where() const { return path; }

  /// The member `key` of this object, or nothing when absent.
  std::optional<Node> find(const char *key) const {
    auto it = value.find(key);
    if (it == value.end())
      return std::nullopt;
    return Node(*it, child(key));
  }

  /// The member `key` of this object, which must be present.
  Node get(const char *key) const {
    if (std::optional<Node> member = find(key))
      return *member;
    throw ManifestError("missing required field '" + child(key) + "'");
  }

  /// Checks that this is an object; returns itself for chaining.
  const Node &object() const {
    if (!value.is_object())
      fail("must be an object, got " + describe(value));
    return *this;
  }

  /// The elements of this array.
  std::vector<Node> array() const {
    if (!value.is_array())
      fail("must be an array, got " + describe(value));
    std::vector<Node> elements;
    elements.reserve(value.size());
    for (size_t i = 0, e = value.size(); i != e; ++i)
      elements.emplace_back(value[i], path + "[" + std::to_string(i) + "]");
    return elements;
  }

  /// The elements of this array, which must not be empty.
  std::vector<Node> nonEmptyArray() const {
    std::vector<Node> elements = array();
    if (elements.empty())
      fail("must not be empty");
    return elements;
  }

  std::string string() const {
    if (!value.is_string())
      fail("must be a string, got " + describe(value));
    return value.get<std::string>();
  }

  std::string nonEmptyString() const {
    std::string text = string();
    if (text.empty())
      fail("must not be empty");
    return text;
  }

  bool boolean() const {
    if (!value.is_boolean())
      fail("must be true or false, got " + describe(value));
    return value.get<bool>();
  }

  /// An integer in [lo, hi].
  int64_t integer(int64_t lo, int64_t hi, const char *expected) const {
    bool ok = false;
    int64_t result = 0;
    if (value.is_number_unsigned()) {
      uint64_t u = value.get<uint64_t>();
      ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      result = static_cast<int64_t>(u);
    } else if (value.is_number_integer()) {
      ok = true;
      result = value.get<int64_t>();
    }
    if (!ok || result < lo || result > hi)
      fail(std::string("must be ") + expected + ", got " + describe(value));
    return result;
  }

  int64_t positiveInt64() const {
    return integer(1, std::numeric_limits<int64_t>::max(),
                   "a positive integer");
  }

  int32_t positiveInt32() const {
    return static_cast<int32_t>(integer(1, std::numeric_limits<int32_t>::max(),
                                        "a positive 32-bit integer"));
  }

  /// A finite number.
  double number() const {
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      fail("must be a finite number, got " + describe(value));
    return value.get<double>();
  }

  /// A number in (0, hi], or (0, inf) when hi is infinite.
  double positiveNumberUpTo(double hi, const char *expected) const {
    double result = number();
    if (!(result > 0 && result <= hi))
      fail(std::string("must be ") + expected + ", got " + describe(value));
    return result;
  }

private:
  std::string child(const char *key) const {
    return path.empty() ? std::string(key) : path + "." + key;
  }

  const Json &value;
  std::string path;
};

/// Fails unless `name` is a valid C identifier (an exported symbol name).
void checkSymbolName(const Node &node, const std::string &name) {
  auto isIdentStart = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  auto isIdentChar = [&](char c) {
    return isIdentStart(c) || (c >= '0' && c <= '9');
  };
  if (name.empty() || !isIdentStart(name.front()) ||
      !std::all_of(name.begin(), name.end(), isIdentChar))
    node.fail("must be a C identifier, got '" + name + "'");
}

/// Joins `names` as "'a', 'b' or 'c'" for messages.
template <typename Range> std::string quotedList(const Range &names) {
  std::string result;
  size_t i = 0, n = std::size(names);
  for (const auto &name : names) {
    if (i != 0)
      result += i + 1 == n ? " or " : ", ";
    result += "'" + std::string(name) + "'";
    ++i;
  }
  return result;
}

/// Looks `text` up in a table of (spelling, value) pairs; fails naming the
/// accepted spellings when it is not there.
template <typename T, size_t N>
T lookupEnum(const Node &node, const std::string &text,
             const std::pair<const char *, T> (&table)[N]) {
  for (const auto &[spelling, value] : table)
    if (text == spelling)
      return value;
  std::vector<const char *> spellings;
  for (const auto &entry : table)
    spellings.push_back(entry.first);
  node.fail("is '" + text + "', expected " + quotedList(spellings));
}

//===----------------------------------------------------------------------===//
// Spellings
//===----------------------------------------------------------------------===//

constexpr std::pair<const char *, fp_target> targetNames[] = {
    {"cpu", FP_TARGET_CPU},
    {"cuda", FP_TARGET_CUDA},
};

constexpr std::pair<const char *, fp_dtype> dtypeNames[] = {
    {"f32", FP_DTYPE_F32},
    {"f64", FP_DTYPE_F64},
    {"bf16", FP_DTYPE_BF16},
};

constexpr std::pair<const char *, BackwardMode> backwardModeNames[] = {
    {"one_step", BackwardMode::OneStep},
    {"truncated", BackwardMode::Truncated},
    {"neumann", BackwardMode::Neumann},
    {"implicit", BackwardMode::Implicit},
};

constexpr std::pair<const char *, FinalNorm> finalNormNames[] = {
    {"none", FinalNorm::None},
    {"rms_norm", FinalNorm::RmsNorm},
    {"layer_norm", FinalNorm::LayerNorm},
};

template <typename T, size_t N>
const char *spell(T value, const std::pair<const char *, T> (&table)[N]) {
  for (const auto &[spelling, entry] : table)
    if (entry == value)
      return spelling;
  return "unknown";
}

//===----------------------------------------------------------------------===//
// Field parsers
//===----------------------------------------------------------------------===//

/// A non-empty array of distinct enum spellings.
template <typename T, size_t N>
std::vector<T> parseEnumSet(const Node &node,
                            const std::pair<const char *, T> (&table)[N]) {
  std::vector<T> result;
  for (const Node &element : node.nonEmptyArray()) {
    T value = lookupEnum(element, element.string(), table);
    if (std::find(result.begin(), result.end(), value) != result.end())
      element.fail("repeats '" + element.string() + "'");
    result.push_back(value);
  }
  return result;
}

InitSpec parseInit(const Node &node) {
  node.object();
  InitSpec init;
  init.kind = node.get("kind").nonEmptyString();
  for (const auto &[key, value] : node.json().items())
    if (key != "kind" && key != "of" && value.is_number())
      init.args[key] = Node(value, node.where() + "." + key).number();
  // The parameter it names is checked once the whole layer is parsed.
  if (std::optional<Node> of = node.find("of"))
    init.of = of->nonEmptyString();
  return init;
}

ParamInfo parseParam(const Node &node) {
  node.object();
  ParamInfo param;
  param.name = node.get("name").nonEmptyString();
  int64_t numElements = 1;
  for (const Node &extent : node.get("shape").array()) {
    int64_t size = extent.positiveInt64();
    if (numElements > std::numeric_limits<int64_t>::max() / size)
      extent.fail("makes the parameter too large to address");
    numElements *= size;
    param.shape.push_back(size);
  }
  param.init = parseInit(node.get("init"));
  param.weightDecay = node.get("weight_decay").boolean();
  if (std::optional<Node> frozen = node.find("frozen"))
    param.frozen = frozen->boolean();
  if (param.frozen && param.weightDecay)
    node.get("frozen").fail(
        "is true, but a frozen parameter cannot have weight_decay");
  return param;
}

BackwardSpec parseBackward(const Node &node) {
  BackwardSpec backward;
  // The string form names a mode without arguments.
  if (node.json().is_string()) {
    backward.mode = lookupEnum(node, node.string(), backwardModeNames);
    if (backward.mode != BackwardMode::OneStep)
      node.fail("is '" + node.string() +
                R"(', which needs an argument; write {"mode": ")" +
                node.string() + R"(", ...})");
    return backward;
  }
  if (!node.json().is_object())
    node.fail("must be a string or an object, got " + describe(node.json()));
  Node mode = node.get("mode");
  backward.mode = lookupEnum(mode, mode.string(), backwardModeNames);
  switch (backward.mode) {
  case BackwardMode::OneStep:
    break;
  case BackwardMode::Truncated:
  case BackwardMode::Neumann:
    backward.steps = node.get("steps").positiveInt32();
    break;
  case BackwardMode::Implicit:
    backward.tolerance =
        node.get("tolerance")
            .positiveNumberUpTo(std::numeric_limits<double>::infinity(),
                                "a positive number");
    break;
  }
  return backward;
}

SolverDefaults parseSolver(const Node &node) {
  node.object();
  constexpr double inf = std::numeric_limits<double>::infinity();
  SolverDefaults solver;
  solver.tolerance =
      node.get("tolerance").positiveNumberUpTo(inf, "a positive number");
  solver.trainQuantile =
      node.get("train_quantile").positiveNumberUpTo(1, "in (0, 1]");
  solver.maxIterTrain = node.get("max_iter_train").positiveInt32();
  solver.maxIterEval = node.get("max_iter_eval").positiveInt32();
  solver.relaxStart =
      node.get("relax_start").positiveNumberUpTo(1, "in (0, 1]");
  solver.relaxDecay =
      node.get("relax_decay").positiveNumberUpTo(1, "in (0, 1]");
  solver.relaxPatience = node.get("relax_patience").positiveInt32();
  solver.backward = parseBackward(node.get("backward"));
  return solver;
}

CostTerms parseCostTerms(const Node &node) {
  node.object();
  auto count = [&](const char *key) {
    Node field = node.get(key);
    double value = field.number();
    if (value < 0)
      field.fail("must be a non-negative number, got " +
                 describe(field.json()));
    return value;
  };
  return {count("per_token"), count("per_sample"), count("fixed")};
}

/// `{"launches": [...]}`, which an iteration cost must not leave empty.
std::vector<LaunchCost> parseLaunches(const Node &node, bool allowEmpty) {
  node.object();
  std::vector<LaunchCost> launches;
  Node list = node.get("launches");
  for (const Node &launchNode :
       allowEmpty ? list.array() : list.nonEmptyArray()) {
    launchNode.object();
    launches.push_back({launchNode.get("op").nonEmptyString(),
                        parseCostTerms(launchNode.get("flops")),
                        parseCostTerms(launchNode.get("elements"))});
  }
  return launches;
}

/// A `call_cost`: `forward` required, `backward` and `backward_step`
/// optional.
CallCost parseCallCost(const Node &node) {
  node.object();
  CallCost cost;
  cost.present = true;
  cost.forward = parseLaunches(node.get("forward"), true);
  if (std::optional<Node> backward = node.find("backward")) {
    cost.hasBackward = true;
    cost.backward = parseLaunches(*backward, true);
  }
  if (std::optional<Node> step = node.find("backward_step"))
    cost.backwardStep = parseLaunches(*step, false);
  return cost;
}

LayerInfo parseLayer(const Node &node) {
  node.object();
  LayerInfo layer;
  layer.name = node.get("name").nonEmptyString();
  layer.dModel = node.get("d_model").positiveInt64();

  Node entryPoints = node.get("entry_points");
  entryPoints.object();
  auto symbol = [&](const char *key) {
    Node field = entryPoints.get(key);
    std::string name = field.string();
    checkSymbolName(field, name);
    return name;
  };
  layer.entryPoints.bufferSizes = symbol("buffer_sizes");
  layer.entryPoints.forward = symbol("forward");
  layer.entryPoints.backward = symbol("backward");
  if (entryPoints.find("schedule"))
    layer.entryPoints.schedule = symbol("schedule");
  if (std::optional<Node> schedule = node.find("schedule"))
    layer.schedule = schedule->nonEmptyString();
  // The chunked forward and its states come together.
  std::optional<Node> chunk = node.find("chunk");
  if (entryPoints.find("forward_chunk")) {
    layer.entryPoints.forwardChunk = symbol("forward_chunk");
    if (!chunk)
      entryPoints.get("forward_chunk")
          .fail("is given, but the layer has no 'chunk' states");
    std::set<std::string> names;
    for (const Node &stateNode : chunk->object().get("states").array()) {
      stateNode.object();
      ChunkStateInfo state;
      state.name = stateNode.get("name").nonEmptyString();
      if (!names.insert(state.name).second)
        stateNode.get("name").fail("repeats state name '" + state.name + "'");
      for (const Node &extent : stateNode.get("shape").array())
        state.shape.push_back(extent.positiveInt64());
      layer.chunkStates.push_back(std::move(state));
    }
  } else if (chunk) {
    chunk->fail("is given, but 'entry_points' has no 'forward_chunk'");
  }

  std::set<std::string> paramNames;
  std::vector<Node> paramNodes = node.get("params").array();
  for (const Node &paramNode : paramNodes) {
    ParamInfo param = parseParam(paramNode);
    if (!paramNames.insert(param.name).second)
      paramNode.get("name").fail("repeats parameter name '" + param.name + "'");
    layer.params.push_back(std::move(param));
  }
  // An initialiser's `of` names another parameter of this layer.
  for (size_t i = 0, e = layer.params.size(); i != e; ++i) {
    const std::string &of = layer.params[i].init.of;
    if (of.empty())
      continue;
    Node ofNode = paramNodes[i].get("init").get("of");
    if (of == layer.params[i].name)
      ofNode.fail("names its own parameter '" + of +
                  "'; it must name another parameter of layer '" + layer.name +
                  "'");
    if (!paramNames.count(of))
      ofNode.fail("names parameter '" + of + "', which layer '" + layer.name +
                  "' lacks");
  }

  if (std::optional<Node> targets = node.find("backward_targets"))
    for (const Node &element : targets->array()) {
      fp_target target = lookupEnum(element, element.string(), targetNames);
      if (std::find(layer.backwardTargets.begin(), layer.backwardTargets.end(),
                    target) != layer.backwardTargets.end())
        element.fail("repeats '" + element.string() + "'");
      layer.backwardTargets.push_back(target);
    }
  if (std::optional<Node> solver = node.find("solver"))
    layer.solver = parseSolver(*solver);
  if (std::optional<Node> cost = node.find("iteration_cost"))
    layer.iterationCost = parseLaunches(*cost, false);
  if (std::optional<Node> cost = node.find("call_cost"))
    layer.callCost = parseCallCost(*cost);
  if (std::optional<Node> split = node.find("cuda_split")) {
    split->object();
    layer.hasCudaSplit = true;
    if (std::optional<Node> cost = split->find("iteration_cost"))
      layer.splitIterationCost = parseLaunches(*cost, false);
    if (std::optional<Node> cost = split->find("call_cost"))
      layer.splitCallCost = parseCallCost(*cost);
  }
  return layer;
}

ModelInfo parseModel(const Node &node, const std::vector<LayerInfo> &layers) {
  node.object();
  ModelInfo model;
  if (std::optional<Node> name = node.find("name"))
    model.name = name->nonEmptyString();
  if (std::optional<Node> vocab = node.find("vocab"))
    model.vocab = vocab->positiveInt64();
  model.dModel = node.get("d_model").positiveInt64();
  for (const Node &entry : node.get("stack").nonEmptyArray()) {
    std::string name = entry.string();
    auto layer =
        std::find_if(layers.begin(), layers.end(),
                     [&](const LayerInfo &l) { return l.name == name; });
    if (layer == layers.end())
      entry.fail("names layer '" + name + "', which the manifest lacks");
    if (layer->dModel != model.dModel)
      entry.fail("names layer '" + name + "' of d_model " +
                 std::to_string(layer->dModel) +
                 ", but the model's d_model is " +
                 std::to_string(model.dModel));
    model.stack.push_back(std::move(name));
  }
  Node finalNorm = node.get("final_norm");
  model.finalNorm = lookupEnum(finalNorm, finalNorm.string(), finalNormNames);
  model.tiedHead = node.get("tied_head").boolean();
  if (std::optional<Node> eps = node.find("norm_eps"))
    model.normEps = eps->positiveNumberUpTo(
        std::numeric_limits<double>::infinity(), "a positive number");
  if (std::optional<Node> multiple = node.find("pad_vocab_multiple"))
    model.padVocabMultiple = multiple->positiveInt64();
  return model;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public interface
//===----------------------------------------------------------------------===//

int64_t ParamInfo::numElements() const {
  int64_t result = 1;
  for (int64_t extent : shape)
    result *= extent;
  return result;
}

bool LayerInfo::hasBackward(fp_target target) const {
  return std::find(backwardTargets.begin(), backwardTargets.end(), target) !=
         backwardTargets.end();
}

bool Manifest::hasTarget(fp_target target) const {
  return std::find(targets.begin(), targets.end(), target) != targets.end();
}

bool Manifest::hasDType(fp_dtype dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

const LayerInfo *Manifest::findLayer(std::string_view name) const {
  for (const LayerInfo &layer : layers)
    if (layer.name == name)
      return &layer;
  return nullptr;
}

Manifest fp::rt::parseManifest(std::string_view text) {
  Json document;
  try {
    document = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error &error) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string what = error.what();
    if (size_t end = what.find("] ");
        what.rfind("[json.", 0) == 0 && end != std::string::npos)
      what.erase(0, end + 2);
    throw ManifestError("malformed JSON: " + what);
  }
  if (!document.is_object())
    throw ManifestError("the manifest must be a JSON object, got " +
                        describe(document));

  Node root(document, "");
  Manifest manifest;
  manifest.abiVersion = static_cast<uint32_t>(
      root.get("abi_version")
          .integer(1, std::numeric_limits<uint32_t>::max(),
                   "a positive integer"));
  manifest.generator = root.get("generator").nonEmptyString();
  if (std::optional<Node> source = root.find("source"))
    manifest.source = source->string();
  manifest.targets = parseEnumSet(root.get("targets"), targetNames);
  manifest.dtypes = parseEnumSet(root.get("dtypes"), dtypeNames);

  for (const Node &layerNode : root.get("layers").nonEmptyArray()) {
    LayerInfo layer = parseLayer(layerNode);
    if (manifest.findLayer(layer.name))
      layerNode.get("name").fail("repeats layer name '" + layer.name + "'");
    for (size_t i = 0; i < layer.backwardTargets.size(); ++i)
      if (!manifest.hasTarget(layer.backwardTargets[i]))
        layerNode.get("backward_targets")
            .array()[i]
            .fail(std::string("names target '") +
                  toString(layer.backwardTargets[i]) +
                  "', which the library's 'targets' lacks");
    manifest.layers.push_back(std::move(layer));
  }

  if (std::optional<Node> model = root.find("model"))
    manifest.model = parseModel(*model, manifest.layers);
  return manifest;
}

const char *fp::rt::toString(fp_target target) {
  return spell(target, targetNames);
}

const char *fp::rt::toString(fp_dtype dtype) {
  return spell(dtype, dtypeNames);
}

const char *fp::rt::toString(BackwardMode mode) {
  return spell(mode, backwardModeNames);
}

const char *fp::rt::toString(FinalNorm norm) {
  return spell(norm, finalNormNames);
}
