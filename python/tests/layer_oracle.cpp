//===- layer_oracle.cpp - CompiledLayer's results for the Python tests ----===//
//
// usage: fpc-layer-oracle REQUEST.pt RESPONSE.pt
//
// Reads a dict saved by Python's torch.save: "library" and "layer" (str),
// "seed" (int), "dtype" ("f32", "f64" or "bf16"), "training" (bool), "input"
// [B, T, D], optionally "grad_output" (then the backward runs too) and
// "params" (a dict of the layer's parameters by manifest name; without it
// the layer keeps those drawn with the seed), and "reference" (bool,
// optional). Runs the C++ runtime's CompiledLayer and writes, with
// torch::pickle_save, a dict of tensors that Python's torch.load reads:
// "output", "iterations", "param.<name>" for every parameter used, and with
// a backward "grad_input" and "grad.<name>". With "reference", also the
// eager reference layer of the library's model (referenceConfigFor) on the
// same weights and input: "reference_output", "reference_iterations";
// "reference_config" (a dict of ints, optional) sets "d_state",
// "head_dim" and "groups" of that reference where the model source sets
// them otherwise.
// Exit 1 with a message on any error.
//
//===----------------------------------------------------------------------===//

#include "fp/Runtime/CompiledLayer.h"
#include "fp/Runtime/ReferenceImport.h"

#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

namespace {

c10::IValue field(const c10::impl::GenericDict &dict, const char *key) {
  auto it = dict.find(c10::IValue(std::string(key)));
  if (it == dict.end())
    throw std::runtime_error(std::string("the request has no '") + key + "'");
  return it->value();
}

bool has(const c10::impl::GenericDict &dict, const char *key) {
  return dict.find(c10::IValue(std::string(key))) != dict.end();
}

int run(const char *requestPath, const char *responsePath) {
  std::ifstream in(requestPath, std::ios::binary);
  if (!in)
    throw std::runtime_error(std::string("cannot read ") + requestPath);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  c10::impl::GenericDict request = torch::pickle_load(bytes).toGenericDict();

  const std::string dtypeName = field(request, "dtype").toStringRef();
  torch::Dtype dtype = dtypeName == "f64"    ? torch::kFloat64
                       : dtypeName == "bf16" ? torch::kBFloat16
                                             : torch::kFloat32;
  auto library =
      fp::rt::loadModelLibrary(field(request, "library").toStringRef());
  fp::rt::CompiledLayer layer(
      library, field(request, "layer").toStringRef(),
      static_cast<uint64_t>(field(request, "seed").toInt()), dtype);
  layer.train(field(request, "training").toBool());
  if (has(request, "params")) {
    torch::NoGradGuard noGrad;
    for (const auto &entry : field(request, "params").toGenericDict())
      layer.parameter(entry.key().toStringRef())
          .copy_(entry.value().toTensor());
  }

  c10::Dict<std::string, torch::Tensor> response;
  torch::Tensor input = field(request, "input").toTensor().to(dtype);
  const bool backward = has(request, "grad_output");
  if (backward)
    input.requires_grad_(true);
  torch::Tensor output;
  {
    // Without a backward, a library compiled without one runs too.
    std::optional<torch::NoGradGuard> noGrad;
    if (!backward)
      noGrad.emplace();
    output = layer.forward(input);
  }
  response.insert("output", output.detach());
  response.insert("iterations", layer.lastIterations);
  for (const fp::rt::ParamInfo &param : layer.info().params)
    response.insert("param." + param.name,
                    layer.parameter(param.name).detach().clone());
  if (backward) {
    output.backward(field(request, "grad_output").toTensor().to(dtype));
    response.insert("grad_input", input.grad());
    for (const fp::rt::ParamInfo &param : layer.info().params)
      response.insert("grad." + param.name, layer.parameter(param.name).grad());
  }
  if (has(request, "reference") && field(request, "reference").toBool()) {
    torch::NoGradGuard noGrad;
    fp::rt::ModelConfig config =
        fp::rt::referenceConfigFor(library->manifest(), "", dtype);
    if (has(request, "reference_config"))
      for (const auto &entry :
           field(request, "reference_config").toGenericDict()) {
        const std::string &key = entry.key().toStringRef();
        if (key == "d_state")
          config.dState = entry.value().toInt();
        else if (key == "head_dim")
          config.headDim = entry.value().toInt();
        else if (key == "groups")
          config.nGroups = entry.value().toInt();
        else
          throw std::runtime_error("reference_config has no setting '" + key +
                                   "'; it takes d_state, head_dim and groups");
      }
    auto reference = fp::rt::ref::makeBlockMixer(config);
    std::vector<torch::Tensor> views =
        fp::rt::referenceWeightsFor(*reference, layer.info());
    for (size_t i = 0; i < views.size(); ++i)
      views[i].copy_(layer.orderedParameters()[i]);
    reference->train(layer.is_training());
    response.insert("reference_output", reference->forward(input.detach()));
    if (reference->lastIterations.defined())
      response.insert("reference_iterations", reference->lastIterations);
  }
  std::vector<char> out = torch::pickle_save(c10::IValue(response));
  std::ofstream file(responsePath, std::ios::binary);
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!file)
    throw std::runtime_error(std::string("cannot write ") + responsePath);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: fpc-layer-oracle REQUEST.pt RESPONSE.pt\n";
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const std::exception &error) {
    std::cerr << "fpc-layer-oracle: " << error.what() << "\n";
    return 1;
  }
}
