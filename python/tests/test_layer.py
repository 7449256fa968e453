#===- test_layer.py - fpc.CompiledLayer against the C++ runtime ----------===#
#
# The Python module and the C++ runtime's CompiledLayer call the same
# library, so on the host they must agree bit for bit: the parameters drawn
# from one seed, the output, the iteration counts and every gradient, in
# f64, f32 and bf16, in training and evaluation mode, for a model of each
# mixer family. Then what users get wrong: shapes, dtypes, devices, a library
# without a backward, a library's own error, files that are no library.
#
#===------------------------------------------------------------------------===#

import os
import unittest

import torch

import fpc
import support

# One model per family of layer and mixer, at d_model 8.
MODELS = ["fp_mamba_kronecker", "fp_mamba_householder2", "fp_mamba_dplr",
          "fp_mamba_monarch", "fp_rnn", "mamba"]


def library(name: str) -> str:
    return support.compile_model(support.model_path(name), name + "_d8",
                                 "--set", "d_model=8", "--backward")


class MatchesTheRuntime(unittest.TestCase):
    def compare(self, name, dtype, training):
        path = library(name)
        layer = fpc.load(path, fpc.Library(path).manifest.layers[0].name,
                         seed=support.SEED, dtype=dtype)
        layer.train(training)
        generator = torch.Generator().manual_seed(support.SEED + 1)
        x = torch.randn(3, 7, 8, generator=generator, dtype=torch.float64)
        w = torch.randn(3, 7, 8, generator=generator, dtype=torch.float64)
        x = x.to(dtype).requires_grad_(True)
        out = layer(x)
        out.backward(w.to(dtype))
        theirs = support.oracle({
            "library": path, "layer": layer.info.name, "seed": support.SEED,
            "dtype": {torch.float64: "f64", torch.float32: "f32",
                      torch.bfloat16: "bf16"}[dtype],
            "training": training, "input": x.detach(), "grad_output": w})
        where = f"{name} {dtype} {'train' if training else 'eval'}"
        for param in layer.info.params:
            self.assertTrue(torch.equal(layer.parameter(param.name).detach(),
                                        theirs["param." + param.name]),
                            f"{where}: initial {param.name}")
        self.assertTrue(torch.equal(out.detach(), theirs["output"]),
                        f"{where}: output")
        self.assertTrue(torch.equal(layer.last_iterations,
                                    theirs["iterations"]),
                        f"{where}: iterations {layer.last_iterations} vs "
                        f"{theirs['iterations']}")
        self.assertTrue(torch.equal(x.grad, theirs["grad_input"]),
                        f"{where}: input gradient")
        for param in layer.info.params:
            self.assertTrue(torch.equal(layer.parameter(param.name).grad,
                                        theirs["grad." + param.name]),
                            f"{where}: gradient of {param.name}")
        if layer.info.solver is not None:
            self.assertTrue(bool((layer.last_iterations >= 1).all()))

    def test_every_family_bit_for_bit(self):
        for name in MODELS:
            for dtype in (torch.float64, torch.float32, torch.bfloat16):
                for training in (True, False):
                    with self.subTest(model=name, dtype=dtype,
                                      training=training):
                        self.compare(name, dtype, training)

    def test_solver_overrides_reach_the_library(self):
        layer = fpc.load(library("fp_mamba_kronecker"), seed=support.SEED,
                         dtype=torch.float64).eval()
        x = torch.randn(2, 5, 8, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(support.SEED))
        with torch.no_grad():
            layer(x)
            free = layer.last_steps
            self.assertGreater(free, 3)
            layer.fixed_iters = 3
            layer(x)
            self.assertEqual(layer.last_steps, 3)
            layer.fixed_iters = None
            layer.max_iter = 2
            layer(x)
            self.assertEqual(layer.last_steps, 2)
            layer.max_iter = None
            layer.eval_iteration_cap = 2
            layer(x)
            self.assertEqual(layer.last_steps, 2)
            # The evaluation cap leaves training mode alone.
            layer.train()
            layer(x)
            self.assertGreater(layer.last_steps, 2)

    def test_tf32_switch_changes_nothing_on_the_cpu(self):
        # allow_tf32 is PyTorch's switch for CUDA GEMMs; a CPU call passes
        # 0 whatever it holds, and the host's GEMMs are exact f32.
        layer = fpc.load(library("fp_mamba_kronecker"), seed=support.SEED)
        x = torch.randn(2, 5, 8,
                        generator=torch.Generator().manual_seed(support.SEED))
        with torch.no_grad():
            with support.allow_tf32(True):
                on = layer(x)
            with support.allow_tf32(False):
                off = layer(x)
        self.assertTrue(torch.equal(on, off))

    def test_chunked_forward_continues_the_sequence(self):
        layer = fpc.load(library("mamba"), seed=support.SEED,
                         dtype=torch.float64)
        x = torch.randn(2, 9, 8, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(support.SEED))
        with torch.no_grad():
            whole = layer(x)
            first, states = layer.forward_chunk(x[:, :4])
            second, _ = layer.forward_chunk(x[:, 4:], states)
        # Mamba has no fixed point: chunks are the same arithmetic.
        self.assertTrue(torch.equal(torch.cat([first, second], 1), whole))


class RefusesBadUse(unittest.TestCase):
    def setUp(self):
        self.path = library("fp_mamba_kronecker")
        self.layer = fpc.load(self.path, "fp_mamba", seed=support.SEED)

    def test_input_shape(self):
        with self.assertRaisesRegex(fpc.FpcError,
                                    r"expects an input \[B, T, 8\] .* got "
                                    r"\[2, 3, 5\]"):
            self.layer(torch.zeros(2, 3, 5))

    def test_dtype_of_the_parameters(self):
        with self.assertRaisesRegex(fpc.FpcError, "parameter 'in_proj.weight' "
                                    "is torch.float32 on cpu but the input is "
                                    "torch.float64"):
            self.layer(torch.zeros(2, 3, 8, dtype=torch.float64))

    def test_dtype_without_abi_type(self):
        with self.assertRaisesRegex(fpc.FpcError, "no element type for "
                                    "torch.float16"):
            self.layer.half()(torch.zeros(2, 3, 8, dtype=torch.float16))

    def test_dtype_not_compiled(self):
        path = support.compile_model(support.model_path("fp_mamba_kronecker"),
                                     "fp_mamba_kronecker_f32", "--set",
                                     "d_model=8", "--dtypes=f32")
        layer = fpc.load(path, "fp_mamba", dtype=torch.float64)
        with self.assertRaisesRegex(fpc.FpcError, "not compiled for dtype "
                                    "f64"), torch.no_grad():
            layer(torch.zeros(2, 3, 8, dtype=torch.float64))

    def test_forward_only_library_refuses_gradients(self):
        path = support.compile_model(support.model_path("fp_mamba_kronecker"),
                                     "fp_mamba_kronecker_forward_only",
                                     "--set", "d_model=8")
        layer = fpc.load(path, "fp_mamba", seed=support.SEED)
        with self.assertRaisesRegex(fpc.FpcError, "fpc --backward"):
            layer(torch.zeros(1, 2, 8))
        with torch.no_grad():
            self.assertEqual(layer(torch.zeros(1, 2, 8)).shape, (1, 2, 8))

    def test_library_message_becomes_the_exception(self):
        layer = fpc.CompiledLayer(support.fixture("forward_fails"),
                                  seed=support.SEED)
        with self.assertRaises(fpc.LibraryError) as caught, torch.no_grad():
            layer(torch.zeros(1, 2, layer.info.d_model))
        self.assertIn("forward failed with FP_ERROR_", str(caught.exception))
        self.assertIn(": ", str(caught.exception).split("failed with")[1])

    def test_unknown_layer(self):
        with self.assertRaisesRegex(fpc.FpcError, "has no layer 'nope'; it "
                                    "has 'fp_mamba'"):
            fpc.load(self.path, "nope")

    def test_missing_file(self):
        with self.assertRaisesRegex(fpc.LoadError, "no such file"):
            fpc.load(os.path.join(support.work_dir(), "missing.so"))

    def test_not_a_library(self):
        text = support.copy_file(support.model_path("mamba"), "mamba.so")
        with self.assertRaisesRegex(fpc.LoadError,
                                    "not a loadable shared library"):
            fpc.load(text)

    def test_fixture_libraries(self):
        # Hand-written libraries, each broken in one way.
        for name, message in (
                ("wrong_abi", "built for model ABI version 99, but this "
                 "package speaks version 6"),
                ("manifest_abi_mismatch", "field 'abi_version' is 7"),
                ("no_abi_symbol", "not an fpc model library"),
                ("missing_entry_point", "lacks entry point"),
                ("malformed_manifest", "has an invalid manifest"),
                ("no_checksum", "lacks symbol 'fp_model_manifest_checksum'"),
                ("edited_manifest", "does not match the checksum")):
            with self.subTest(fixture=name):
                with self.assertRaisesRegex(fpc.LoadError, message):
                    fpc.Library(support.fixture(name))

    def test_edited_manifest(self):
        copy = support.copy_file(self.path, "edited.so")
        with open(copy, "rb") as file:
            data = file.read()
        at = data.index(b'"d_model":8')
        with open(copy, "wb") as file:
            file.write(data[:at] + b'"d_model":9' + data[at + 11:])
        with self.assertRaisesRegex(fpc.LoadError, "does not match the "
                                    "checksum"):
            fpc.load(copy)


if __name__ == "__main__":
    unittest.main()
