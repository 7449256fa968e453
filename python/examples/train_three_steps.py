#!/usr/bin/env python3
#===- train_three_steps.py - A compiled model in a plain PyTorch loop ----===#
#
# usage: train_three_steps.py MODEL.so TEXT_FILE OUT.pt
#
# Loads the language model of a library built with `fpc --backward`, trains
# it for three steps on the bytes of a text file with torch.optim.AdamW,
# and saves its state dict. docs/python.md walks through it.
#
#===------------------------------------------------------------------------===#

import sys

import torch

import fpc


def main():
    library, text_file, out = sys.argv[1:4]
    torch.manual_seed(0)
    # Byte-level tokens: 256 byte values and an end-of-text id.
    model = fpc.load(library, vocab_size=257)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    with open(text_file, "rb") as file:
        data = torch.tensor(list(file.read()), dtype=torch.long)
    batch, context = 8, 64
    starts = torch.randint(0, len(data) - context - 1, (batch,))
    blocks = torch.stack([data[s:s + context + 1] for s in starts])
    inputs, targets = blocks[:, :-1], blocks[:, 1:]

    model.train()
    for step in range(3):
        logits = model(inputs)  # [batch, context, padded vocabulary]
        loss = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()  # through each layer's derived backward
        optimizer.step()
        iterations = model.blocks[0].last_iterations.float().mean()
        print(f"step {step + 1}: loss {loss.item():.4f}, "
              f"fixed-point iterations {iterations:.1f}")

    torch.save(model.state_dict(), out)
    print(f"saved {out}")


if __name__ == "__main__":
    main()
