#===- test_reference.py - Weights in the reference code's naming ---------===#
#
# A state dict in the reference code's naming, built from fpc's naming
# table and random tensors, goes through import and export unchanged, for
# a layer of each kind and mixer and for a language model; the wrappers the
# reference's scripts add (DDP's module., torch.compile's _orig_mod., a
# checkpoint dict) are accepted; what does not fit is refused, listed, with
# nothing loaded. An imported layer computes what the eager reference
# computes on the same weights (f64, within the compiled-vs-eager tolerance
# of 1e-9 relative, with the same iteration counts).
#
#===------------------------------------------------------------------------===#

import os
import sys
import unittest

import torch

import fpc
import support

MODELS = ["fp_mamba_kronecker", "fp_mamba_householder2", "fp_mamba_dplr",
          "fp_mamba_monarch", "fp_mamba_arith", "fp_rnn", "fp_rnn_mixture",
          "fp_rnn_selective_dense", "mamba"]


def library(name: str) -> str:
    return support.compile_model(support.model_path(name), name + "_d8",
                                 "--set", "d_model=8", "--dtypes=f64")


def layer_of(name: str, seed: int = support.SEED):
    path = library(name)
    return fpc.load(path, fpc.Library(path).manifest.layers[0].name,
                    seed=seed, dtype=torch.float64)


def random_reference_state(module, seed: int):
    """A reference-named state dict of random tensors, from the table."""
    generator = torch.Generator().manual_seed(seed)
    state = {row.reference: torch.randn(row.reference_shape,
                                        generator=generator,
                                        dtype=torch.float64)
             for row in fpc.naming_table(module)}
    if isinstance(module, fpc.CompiledModel):
        state["lm_head.weight"] = state["backbone.embedding.weight"].clone()
    return state


class RoundTrip(unittest.TestCase):
    def assert_same(self, ours, theirs):
        self.assertEqual(list(ours), list(theirs))
        for key in theirs:
            self.assertTrue(torch.equal(ours[key], theirs[key]), key)

    def test_every_layer_kind_and_mixer(self):
        for name in MODELS:
            with self.subTest(model=name):
                layer = layer_of(name)
                state = random_reference_state(layer, support.SEED + 1)
                fpc.from_reference(layer, state)
                self.assert_same(fpc.to_reference(layer), state)

    def test_language_model(self):
        path = support.small_lm("--dtypes=f32")
        model = fpc.load(path, vocab_size=257, seed=support.SEED)
        state = random_reference_state(model, support.SEED + 2)
        state = {key: value.float() for key, value in state.items()}
        self.assertIn("backbone.layers.1.mixer.mixer.u_proj.parametrizations"
                      ".weight.original0", state)
        self.assertEqual(state["backbone.layers.0.mixer.conv1d.weight"].shape,
                         (32, 1, 4))
        fpc.from_reference(model, state)
        self.assert_same(fpc.to_reference(model), state)
        self.assertTrue(torch.equal(model.embedding.weight,
                                    state["backbone.embedding.weight"]))

    def test_fp_rnn_keys_carry_the_compiled_mixer(self):
        layer = layer_of("fp_rnn")
        keys = list(fpc.to_reference(layer))
        self.assertIn("mixer._orig_mod.uv_project.parametrizations.weight"
                      ".original0", keys)
        self.assertIn("input_trans.weight", keys)
        plain = fpc.to_reference(layer, compiled_mixer=False)
        self.assertIn("mixer.uv_project.parametrizations.weight.original0",
                      plain)

    def test_wrappers_are_accepted(self):
        layer = layer_of("fp_mamba_kronecker")
        state = random_reference_state(layer, support.SEED + 3)
        wrapped = {"module._orig_mod." + key.replace("mixer.",
                                                     "mixer._orig_mod."): value
                   for key, value in state.items()}
        path = os.path.join(support.work_dir(), "checkpoint.pth")
        torch.save({"state_dict": wrapped, "step": 7}, path)
        fpc.from_reference(layer, path)
        self.assert_same(fpc.to_reference(layer), state)


class Refusals(unittest.TestCase):
    def test_missing_unexpected_misshaped_listed_nothing_loaded(self):
        layer = layer_of("fp_mamba_kronecker")
        before = {k: v.clone() for k, v in layer.state_dict().items()}
        state = random_reference_state(layer, support.SEED + 4)
        del state["D"]
        state["mixer.u_proj.weight"] = torch.zeros(2, 2)
        state["conv1d.weight"] = torch.zeros(16, 1, 4)
        state["A_log"] = torch.zeros(16, 5)  # [d, N] = [16, 16]
        with self.assertRaises(fpc.WeightsError) as caught:
            fpc.from_reference(layer, state)
        message = str(caught.exception)
        self.assertIn("missing (1): D", message)
        self.assertIn("unexpected (2): mixer.u_proj.weight, conv1d.weight",
                      message)
        self.assertIn("mis-shaped (1): A_log [16, 5] (expected [16, 16])",
                      message)
        for key, value in layer.state_dict().items():
            self.assertTrue(torch.equal(value, before[key]), key)

    def test_head_that_is_not_the_embedding(self):
        path = support.small_lm("--dtypes=f32")
        model = fpc.load(path, vocab_size=257, seed=support.SEED)
        state = fpc.to_reference(model)
        state["lm_head.weight"] = state["lm_head.weight"] + 1
        with self.assertRaisesRegex(fpc.WeightsError, "lm_head.weight "
                                    r"\(differs from the embedding"):
            fpc.from_reference(model, state)

    def test_block_householder_has_no_counterpart(self):
        layer = layer_of("fp_mamba_block_householder")
        with self.assertRaisesRegex(fpc.FpcError, "block Householder"):
            fpc.to_reference(layer)


class SameFunctionAsTheEagerReference(unittest.TestCase):
    def test_imported_layers(self):
        for name in MODELS:
            with self.subTest(model=name):
                path = library(name)
                layer = layer_of(name).eval()
                # Weights as the initialisers draw them (another seed), in
                # the reference's naming.
                state = fpc.to_reference(layer_of(name, support.SEED + 5))
                fpc.from_reference(layer, state)
                generator = torch.Generator().manual_seed(support.SEED)
                x = torch.randn(2, 6, 8, generator=generator,
                                dtype=torch.float64)
                with torch.no_grad():
                    out = layer(x)
                params = {param.name: layer.parameter(param.name).detach()
                          for param in layer.info.params}
                theirs = support.oracle({
                    "library": path, "layer": layer.info.name,
                    "seed": support.SEED, "dtype": "f64", "training": False,
                    "input": x, "params": params, "reference": True})
                eager = theirs["reference_output"]
                error = float((out - eager).abs().max()
                              / eager.abs().max().clamp_min(1e-300))
                print(f"{name}: imported vs eager reference {error:.1e}",
                      file=sys.stderr)
                self.assertLess(error, 1e-9, name)
                if "reference_iterations" in theirs:
                    self.assertTrue(torch.equal(
                        layer.last_iterations,
                        theirs["reference_iterations"]), name)


if __name__ == "__main__":
    unittest.main()
