#===- test_gradcheck.py - The library's gradients by finite differences --===#
#
# torch.autograd.gradcheck (f64, central differences) of CompiledLayer, one
# layer of each mixer family, through the library's derived backward. The
# reference's gradient (one_step) is not the derivative of the converged
# layer, so the layers are compiled from a copy of models/lib whose
# fixed_point solves to a relative residual of 1e-13 and takes the implicit
# gradient (the adjoint fixed point, solved to 1e-13): differences of the
# converged layer are then the derivative it claims, to ~1e-13 / eps. The
# same check fails for the one_step gradient, so it can tell them apart.
#
# FP-Mamba's out_norm gain (FP-Mamba2's norm gain) is scaled by 0.25: at
# the initialisation's gain of 1 some draws have no convergent fixed point at
# d_model 8 (the solve stalls at residuals of 1e-2), and a derivative needs
# one. FP-Mamba2 runs with heads of 4 channels in 2 groups, so that the
# check covers ssd_scan's repetition over heads and its split into groups.
#
#===------------------------------------------------------------------------===#

import os
import shutil
import sys
import unittest

import torch

import fpc
import support

# (name, layer, mixer library, mixer instance)
FAMILIES = [
    ("kronecker", "fp_mamba", "kronecker", "kronecker()"),
    ("householder", "fp_mamba", "householder", "householder(r = 2)"),
    ("dplr", "fp_mamba", "dplr", "dplr(r = 2)"),
    ("monarch", "fp_mamba", "monarch", "monarch(r = 2)"),
    ("block_householder", "fp_mamba", "block_householder",
     "block_householder(r = 2, blocks = 2)"),
    ("mixture", "fp_rnn", "mixture", "mixture(r = 2)"),
    ("selective_dense", "fp_rnn", "selective_dense", "selective_dense()"),
    ("spectral_kronecker", "fp_rnn", "kronecker",
     "kronecker(spectral = true)"),
    ("fp_mamba2_kronecker", "fp_mamba2", "kronecker", "kronecker()"),
    ("nonselective", "fp_mamba", "nonselective", "nonselective()"),
]

# The gain each layer's gain scaling applies to (see above).
NORM_GAINS = {"fp_mamba": "out_norm.weight", "fp_mamba2": "norm.weight"}

# Each layer library's fixed_point call, and what the copy appends to it.
EXACT = "max_iter_eval = 100000, backward = implicit(1.0e-13)"
EDITS = {
    "fp_mamba.fp": ("max_iter_train = max_iter)",
                    f"max_iter_train = max_iter, {EXACT})"),
    "fp_mamba2.fp": ("max_iter_train = max_iter)",
                     f"max_iter_train = max_iter, {EXACT})"),
    "fp_rnn.fp": ("relax_start = 1.0, relax_decay = 1.0)",
                  "relax_start = 1.0, relax_decay = 1.0, tolerance = "
                  f"1.0e-13, {EXACT})"),
}


def exact_libraries() -> str:
    """A copy of models/lib whose layers solve exactly, with the implicit
    gradient; its directory (to import from)."""
    root = support.work_dir("exact")
    target = os.path.join(root, "lib")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(os.path.join(support.source_dir(), "models", "lib"),
                    target)
    for name, (old, new) in EDITS.items():
        path = os.path.join(target, name)
        with open(path) as file:
            text = file.read()
        if text.count(old) != 1:
            raise AssertionError(f"models/lib/{name} no longer holds "
                                 f"'{old}' once; update test_gradcheck.py")
        with open(path, "w") as file:
            file.write(text.replace(old, new))
    return root


def compile_family(family, root=None, suffix="exact"):
    name, layer, mixer, instance = family
    extra = {"fp_mamba": "N = 4, ", "fp_mamba2": "N = 4, P = 4, G = 2, "}.get(
        layer, "")
    if root is not None and layer in NORM_GAINS:
        extra += "tolerance = 1.0e-13, "
    text = (f'import "lib/{layer}.fp"\nimport "lib/{mixer}.fp"\n'
            f"model {name} {{\n  d_model = 8\n"
            f"  layer = {layer}({extra}mixer_type = {instance})\n}}\n")
    directory = support.work_dir("sources")
    path = os.path.join(directory, f"{name}_{suffix}.fp")
    with open(path, "w") as file:
        file.write(text)
    include = root or os.path.join(support.source_dir(), "models")
    return support.compile_model(path, f"{name}_{suffix}", "-I", include,
                                 "--backward", "--dtypes=f64")


def prepared_layer(path: str, layer_name: str):
    layer = fpc.load(path, seed=support.SEED, dtype=torch.float64).eval()
    if layer_name in NORM_GAINS:
        with torch.no_grad():
            layer.parameter(NORM_GAINS[layer_name]).mul_(0.25)
    generator = torch.Generator().manual_seed(support.SEED)
    x = torch.randn(2, 3, 8, dtype=torch.float64, generator=generator)
    return layer, x


class GradCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = exact_libraries()

    def test_every_mixer_family(self):
        for family in FAMILIES:
            with self.subTest(family=family[0]):
                path = compile_family(family, self.root)
                layer, x = prepared_layer(path, family[1])
                with torch.no_grad():
                    layer(x)
                self.assertLess(float(layer.last_residuals.max()), 1e-12,
                                f"{family[0]}: the solve did not converge")
                # A frozen parameter (the orthogonal map's base) has no
                # gradient to check.
                params = [p.detach().clone().requires_grad_(not info.frozen)
                          for p, info in zip(layer.ordered_parameters(),
                                             layer.info.params)]
                # Every entry of the input's Jacobian ...
                self.assertTrue(torch.autograd.gradcheck(
                    lambda x: layer.forward_with(x, params),
                    (x.clone().requires_grad_(True),),
                    eps=1e-6, atol=1e-6, rtol=1e-4))
                # ... and the parameters' along random directions.
                self.assertTrue(torch.autograd.gradcheck(
                    lambda x, *p: layer.forward_with(x, p),
                    (x.clone().requires_grad_(True), *params),
                    eps=1e-6, atol=1e-6, rtol=1e-4, fast_mode=True))
                self.assertGreater(layer.last_backward_steps, 0)

    def test_one_step_gradient_fails_the_same_check(self):
        family = FAMILIES[0]
        path = compile_family(family, suffix="one_step")
        layer, x = prepared_layer(path, family[1])
        layer.tolerance = 1e-13
        params = [p.detach() for p in layer.ordered_parameters()]
        self.assertFalse(torch.autograd.gradcheck(
            lambda x: layer.forward_with(x, params),
            (x.clone().requires_grad_(True),), eps=1e-6, atol=1e-6,
            rtol=1e-4, raise_exception=False))


class GroupsAgainstTheEagerReference(unittest.TestCase):
    """FP-Mamba2 with 4 heads in 2 groups computes what the eager reference
    computes (f64, 1e-9 relative, the same iteration counts): the model
    files' one group leaves ssd_scan's split into groups to this test."""

    def test_fp_mamba2_in_groups(self):
        family = next(f for f in FAMILIES if f[0] == "fp_mamba2_kronecker")
        path = compile_family(family, suffix="groups")
        layer, x = prepared_layer(path, family[1])
        with torch.no_grad():
            out = layer(x)
        params = {param.name: layer.parameter(param.name).detach()
                  for param in layer.info.params}
        theirs = support.oracle({
            "library": path, "layer": layer.info.name, "seed": support.SEED,
            "dtype": "f64", "training": False, "input": x, "params": params,
            "reference": True,
            "reference_config": {"d_state": 4, "head_dim": 4, "groups": 2}})
        eager = theirs["reference_output"]
        error = float((out - eager).abs().max() / eager.abs().max())
        print(f"fp_mamba2, 4 heads in 2 groups: compiled vs eager reference "
              f"{error:.1e}, iterations {layer.last_iterations.tolist()}",
              file=sys.stderr)
        self.assertLess(error, 1e-9)
        self.assertTrue(torch.equal(layer.last_iterations,
                                    theirs["reference_iterations"]))


if __name__ == "__main__":
    unittest.main()
