#!/usr/bin/env python3
"""Whether two cubins hold the same machine code.

Compares every section of two ELF cubins (`nvcc -cubin`, or `cuobjdump
-xelf all` of a library) byte for byte, except where the bytes are symbol
indices: relocations, the call graph and the `.nv.info` attributes that name
a function (its registers, frame and stack sizes, parameter bank, the
functions it calls) are compared with each index read as its symbol's name,
and the symbol table as a set. So two cubins that list the same symbols in
another order (ptxas on several threads does) compare equal, and a kernel
whose instructions, registers or stack differ does not. Not compared: the
string tables, and the note in which ptxas records its command line.

Prints each section that differs and a summary line; exits 0 when none
does, 1 otherwise.

usage: utils/cubin-same.py a.cubin b.cubin
"""
import struct
import sys

# .nv.info attributes (EIATTR_*) whose value begins with a symbol index:
# PARAM_CBANK, FRAME_SIZE, MIN_STACK_SIZE, MAX_STACK_SIZE, REGCOUNT.
SYMBOL_FIRST = {0x0A, 0x11, 0x12, 0x23, 0x2F}
# EXTERNS: a list of symbol indices.
SYMBOL_LIST = 0x0F
# EIFMT_SVAL: an attribute with a 16-bit size and a value; others hold a
# 16-bit value in place.
SIZED = 0x04
UNCOMPARED = {".symtab", ".strtab", ".shstrtab", ".note.nv.tkinfo"}


class Cubin:
    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] != b"\x7fELF" or data[4] != 2:
            sys.exit(f"{path}: not a 64-bit ELF file")
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                   for i in range(shnum)]
        names_at = headers[shstrndx][4]

        def name(offset):
            start = names_at + offset
            return data[start:data.index(b"\0", start)].decode()

        NOBITS = 8
        self.sections = []
        for header in headers:
            kind, offset, size = header[1], header[4], header[5]
            body = b"" if kind == NOBITS else data[offset:offset + size]
            self.sections.append((name(header[0]), body))
        self.by_name = dict(self.sections)
        if ".symtab" not in self.by_name:
            sys.exit(f"{path}: no symbol table")
        table, strings = self.by_name[".symtab"], self.by_name[".strtab"]
        self.symbols = []
        for at in range(0, len(table), 24):
            offset, info, other, index, value, size = struct.unpack_from(
                "<IBBHQQ", table, at)
            section = (self.sections[index][0]
                       if 0 < index < len(self.sections) else index)
            self.symbols.append((strings[offset:strings.index(b"\0", offset)]
                                 .decode(), info, other, section, value, size))

    def symbol(self, index):
        return self.symbols[index][0] if index < len(self.symbols) else index

    def info(self, body):
        attributes, at = [], 0
        while at < len(body):
            form, attribute = body[at], body[at + 1]
            if form != SIZED:
                attributes.append((attribute, body[at + 2:at + 4]))
                at += 4
                continue
            size = struct.unpack_from("<H", body, at + 2)[0]
            value = body[at + 4:at + 4 + size]
            at += 4 + size
            if attribute == SYMBOL_LIST:
                value = tuple(self.symbol(i) for i in
                              struct.unpack_from(f"<{size // 4}I", value))
            elif attribute in SYMBOL_FIRST and size >= 4:
                value = (self.symbol(struct.unpack_from("<I", value)[0]),
                         value[4:])
            attributes.append((attribute, value))
        return sorted(attributes, key=repr)

    def normal(self, name):
        """The section's contents with symbol indices read as names."""
        body = self.by_name[name]
        if name.startswith(".rela"):
            entries = [struct.unpack_from("<QQq", body, at)
                       for at in range(0, len(body), 24)]
            return sorted((offset, self.symbol(info >> 32), info & 0xFFFFFFFF,
                           addend) for offset, info, addend in entries)
        if name == ".nv.callgraph":
            words = struct.unpack_from(f"<{len(body) // 4}I", body)
            return sorted((self.symbol(words[i]), self.symbol(words[i + 1]))
                          for i in range(0, len(words) - 1, 2))
        if name.startswith(".nv.info"):
            return self.info(body)
        return body


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    a, b = Cubin(sys.argv[1]), Cubin(sys.argv[2])
    differ = 0
    if sorted(a.symbols, key=repr) != sorted(b.symbols, key=repr):
        print("the symbol tables differ")
        differ += 1
    for name in sorted(set(a.by_name) ^ set(b.by_name)):
        print(f"in one cubin only: {name}")
        differ += 1
    common = sorted(set(a.by_name) & set(b.by_name))
    for name in common:
        if name not in UNCOMPARED and a.normal(name) != b.normal(name):
            print(f"differs: {name}")
            differ += 1
    code = sum(name.startswith(".text.") for name in common)
    print(f"{len(common)} sections in both, {code} of them code: " +
          ("the same up to symbol order" if not differ else f"{differ} differ"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
