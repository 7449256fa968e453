#===- test_example.py - docs/python.md's example runs --------------------===#
#
# Runs python/examples/train_three_steps.py as the guide does, on a small
# compiled LM and real English text: three steps whose loss falls on the
# batch they train on, and a state dict that loads back into a fresh model.
#
#===------------------------------------------------------------------------===#

import os
import re
import subprocess
import sys
import unittest

import torch

import fpc
import support



class Example(unittest.TestCase):
    def test_train_three_steps(self):
        library = support.small_lm("--backward")
        out = os.path.join(support.work_dir(), "model.pt")
        script = os.path.join(support.source_dir(), "python", "examples",
                              "train_three_steps.py")
        result = subprocess.run([sys.executable, script, library,
                                 support.fortune("science"), out],
                                capture_output=True, text=True,
                                env=dict(os.environ))
        self.assertEqual(result.returncode, 0, result.stderr)
        losses = [float(value) for value in
                  re.findall(r"loss ([0-9.]+)", result.stdout)]
        self.assertEqual(len(losses), 3, result.stdout)
        self.assertLess(losses[2], losses[0], result.stdout)
        fresh = fpc.load(library, vocab_size=257, seed=1)
        state = torch.load(out)
        fresh.load_state_dict(state)
        for name, tensor in fresh.state_dict().items():
            self.assertTrue(torch.equal(tensor, state[name]), name)


if __name__ == "__main__":
    unittest.main()
