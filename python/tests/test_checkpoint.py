#===- test_checkpoint.py - fp-train's runs opened from Python ------------===#
#
# fp-train trains a compiled byte-level language model on real English text
# (Debian's fortunes) for a few steps; Python opens the run (config.json,
# checkpoint.pt) with fpc.load_run, rebuilds the validation blocks as
# fp-train cuts them (docs/tasks.md: documents joined as EOS text EOS, the
# last --val-fraction of the tokens held out, --eval-count blocks of
# context + 1 spread evenly over it) and computes the loss fp-train wrote
# to eval.json. Same library, same weights, same blocks and batches: the
# only freedom left is the order of the float64 sum over tokens.
#
#===------------------------------------------------------------------------===#

import json
import math
import os
import subprocess
import sys
import unittest

import torch

import fpc
import support

EOS = 256


def byte_documents(path: str, separator: bytes):
    """The token ids of a text file as fp-train reads it: each document
    (split at lines equal to `separator`) as EOS, its bytes, EOS."""
    with open(path, "rb") as file:
        text = file.read()
    documents, start, line = [], 0, 0
    while line < len(text):
        end = text.find(b"\n", line)
        following = len(text) if end < 0 else end + 1
        if text[line:len(text) if end < 0 else end] == separator:
            documents.append(text[start:line])
            start = following
        line = following
    documents.append(text[start:])
    ids = []
    for document in documents:
        if document:
            ids += [EOS, *document, EOS]
    return ids


def validation_blocks(config: dict):
    task = config["task"]
    ids = []
    for path in task["data"]:
        ids += byte_documents(path, task["doc_sep"].encode())
    fraction = task.get("val_fraction") or 0.05
    held = min(len(ids), math.ceil(fraction * len(ids)))
    split = torch.tensor(ids[len(ids) - held:], dtype=torch.int64)
    length = task["context_length"]
    count = len(split) // (length + 1)
    rows = min(task["eval_count"], count)
    blocks = torch.stack([split[i * (length + 1):(i + 1) * (length + 1)]
                          for i in (r * count // rows for r in range(rows))])
    return blocks[:, :length], blocks[:, 1:]


class RunFromPython(unittest.TestCase):
    def test_validation_loss_equals_fp_train(self):
        text = support.fortune("computers")
        library = support.small_lm("--backward")
        run = os.path.join(support.work_dir(), "run")
        subprocess.run(["rm", "-rf", run], check=True)
        subprocess.run(
            [support.require_env("FPC_TEST_FP_TRAIN"), "--task", "lm",
             "--data", text, "--doc-sep", "%", "--context-len", "48",
             "--model", library, "--batch", "8", "--steps", "4",
             "--eval-count", "24", "--eval-batch", "8", "--eval-every", "0",
             "--seed", str(support.SEED), "--progress", "none", "--out", run],
            check=True, capture_output=True)
        with open(os.path.join(run, "config.json")) as file:
            config = json.load(file)
        with open(os.path.join(run, "eval.json")) as file:
            expected = json.load(file)["lengths"][0]

        state = fpc.load_checkpoint(os.path.join(run, "checkpoint.pt"))
        model = fpc.load_run(run)
        self.assertEqual(sorted(state), sorted(model.state_dict()))
        for name, tensor in model.state_dict().items():
            self.assertTrue(torch.equal(tensor, state[name]), name)

        inputs, targets = validation_blocks(config)
        self.assertEqual(inputs.shape[0], expected["sequences"])
        loss_sum, tokens = 0.0, 0
        batch = config["task"]["eval_batch"]
        with torch.no_grad():
            for first in range(0, inputs.shape[0], batch):
                logits = model(inputs[first:first + batch])
                target = targets[first:first + batch].reshape(-1)
                losses = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), target,
                    reduction="none")
                loss_sum += float(losses.double().sum())
                tokens += target.numel()
        self.assertEqual(tokens, expected["tokens"])
        loss = loss_sum / tokens
        print(f"\nvalidation loss: Python {loss!r}, fp-train "
              f"{expected['loss']!r}", file=sys.stderr)
        # Only the order of a float64 sum of ~1e3 float32 terms may differ.
        self.assertAlmostEqual(loss, expected["loss"], delta=1e-12 * loss)

    def test_not_a_checkpoint(self):
        path = os.path.join(support.work_dir(), "not-a-checkpoint.pt")
        with open(path, "wb") as file:
            file.write(b"not an archive")
        with self.assertRaisesRegex(fpc.FpcError, "not a LibTorch archive"):
            fpc.load_checkpoint(path)
        torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path)
        with self.assertRaisesRegex(fpc.FpcError, "not an fp-train "
                                    "checkpoint"):
            fpc.load_checkpoint(path)

    def test_weights_load_all_or_nothing(self):
        library = support.small_lm("--backward")
        model = fpc.CompiledModel(library, 257, seed=support.SEED)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        state = {k: torch.zeros_like(v) for k, v in before.items()}
        del state["norm_f.weight"]
        state["layers.0.mixer.extra"] = torch.zeros(3)
        state["embedding.weight"] = torch.zeros(5, 16)
        with self.assertRaises(fpc.WeightsError) as caught:
            fpc.load_state_dict(model, state)
        message = str(caught.exception)
        self.assertIn("missing (1): norm_f.weight", message)
        self.assertIn("unexpected (1): layers.0.mixer.extra", message)
        self.assertIn("mis-shaped (1): embedding.weight [5, 16] (expected "
                      "[264, 16])", message)
        for name, tensor in model.state_dict().items():
            self.assertTrue(torch.equal(tensor, before[name]), name)


if __name__ == "__main__":
    unittest.main()
