#===- test_cuda.py - The package on a GPU --------------------------------===#
#
# Runs where PyTorch sees a GPU and FPC_TEST_CUDA_MODELS names a directory
# of libraries built with `fpc --target=all --backward` (tools/gpu-check.sh
# run python); skipped elsewhere. For each library, the same layer and
# weights on the CPU and on CUDA: outputs and gradients within the
# tolerances of the C++ CUDA tests (f64 1e-9, f32 1e-4 relative), the same
# result on a side stream as on the default one; PyTorch's allow_tf32
# reaching the library; then three training steps of a compiled LM in a
# standard loop with torch.autocast to bf16.
#
#===------------------------------------------------------------------------===#

import os
import unittest

import torch

import fpc
import support

LAYERS = ["fp_mamba_kronecker", "fp_mamba_householder2", "fp_rnn", "mamba"]


def libraries() -> str:
    directory = os.environ.get("FPC_TEST_CUDA_MODELS", "")
    if not torch.cuda.is_available() or not directory:
        raise unittest.SkipTest("needs a GPU and FPC_TEST_CUDA_MODELS")
    return directory


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


class OnCuda(unittest.TestCase):
    def test_layers_match_the_host(self):
        directory = libraries()
        for name in LAYERS:
            path = os.path.join(directory, name + ".so")
            for dtype, tolerance in ((torch.float64, 1e-9),
                                     (torch.float32, 1e-4)):
                with self.subTest(model=name, dtype=dtype):
                    host = fpc.load(path, fpc.Library(path).manifest.layers[0]
                                    .name, seed=support.SEED, dtype=dtype)
                    device = fpc.load(path, host.info.name,
                                      seed=support.SEED, dtype=dtype).cuda()
                    g = torch.Generator().manual_seed(support.SEED)
                    d = host.info.d_model
                    x = torch.randn(4, 17, d, generator=g, dtype=dtype)
                    w = torch.randn(4, 17, d, generator=g, dtype=dtype)
                    xh = x.clone().requires_grad_(True)
                    xd = x.cuda().requires_grad_(True)
                    host(xh).backward(w)
                    out = device(xd)
                    out.backward(w.cuda())
                    expected = host(x.clone()).detach()
                    self.assertLess(relative(out.detach(), expected),
                                    tolerance)
                    self.assertLess(relative(xd.grad, xh.grad), tolerance)
                    for param in host.info.params:
                        self.assertLess(
                            relative(device.parameter(param.name).grad,
                                     host.parameter(param.name).grad),
                            tolerance, param.name)
                    # A side stream gives what the default one gave.
                    stream = torch.cuda.Stream()
                    with torch.no_grad(), torch.cuda.stream(stream):
                        side = device(x.cuda())
                    stream.synchronize()
                    with torch.no_grad():
                        self.assertTrue(torch.equal(side, device(x.cuda())))

    def test_tf32_follows_torch_switch(self):
        # torch.backends.cuda.matmul.allow_tf32 reaches the library's f32
        # GEMMs (the ABI's allow_tf32) at every call: at B·T = 2048 rows
        # the output with it differs from the exact f32 one, which comes
        # back bit for bit once it is off again.
        path = os.path.join(libraries(), "fp_mamba_householder2.so")
        layer = fpc.load(path, fpc.Library(path).manifest.layers[0].name,
                         seed=support.SEED).cuda().eval()
        g = torch.Generator().manual_seed(support.SEED)
        x = torch.randn(64, 32, layer.info.d_model, generator=g).cuda()
        with torch.no_grad():
            with support.allow_tf32(False):
                exact = layer(x)
            with support.allow_tf32(True):
                rounded = layer(x)
            with support.allow_tf32(False):
                again = layer(x)
        self.assertFalse(torch.equal(rounded, exact))
        self.assertTrue(torch.equal(again, exact))

    def test_training_step_under_autocast(self):
        path = os.path.join(libraries(), "fp_mamba_lm.so")
        model = fpc.load(path, vocab_size=257, seed=support.SEED).cuda()
        for block in model.blocks:
            block.compute_dtype = torch.bfloat16
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(support.SEED)
        tokens = torch.randint(0, 257, (2, 129), generator=g).cuda()
        losses = []
        model.train()
        for _ in range(3):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(tokens[:, :-1])
                loss = torch.nn.functional.cross_entropy(
                    logits.float().flatten(0, 1), tokens[:, 1:].flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        self.assertTrue(all(torch.isfinite(torch.tensor(losses))), losses)
        self.assertLess(losses[-1], losses[0], losses)


if __name__ == "__main__":
    unittest.main()
