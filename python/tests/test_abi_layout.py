#===- test_abi_layout.py - ctypes structs against ModelABI.h -------------===#
#
# Every field of every ABI struct the package declares sits at the offset a
# C compiler gives it in runtime/include/fp/Runtime/ModelABI.h, every struct
# has the header's size and field list, and the version is the header's.
#
#===------------------------------------------------------------------------===#

import ctypes
import subprocess
import unittest

import support
from fpc import _abi


class AbiLayoutTest(unittest.TestCase):
    def test_every_field_is_where_c_puts_it(self):
        printer = support.require_env("FPC_TEST_ABI_LAYOUT")
        lines = subprocess.run([printer], check=True, capture_output=True,
                               text=True).stdout.splitlines()
        fields, sizes, version = {}, {}, None
        for line in lines:
            struct, name, value = line.split()
            if struct == "abi":
                version = int(value)
            elif name == "sizeof":
                sizes[struct] = int(value)
            else:
                fields.setdefault(struct, []).append((name, int(value)))
        self.assertEqual(version, _abi.ABI_VERSION)
        self.assertEqual(set(sizes), set(_abi.STRUCTS))
        for struct, declared in _abi.STRUCTS.items():
            with self.subTest(struct=struct):
                self.assertEqual(ctypes.sizeof(declared), sizes[struct])
                ours = [(name, getattr(declared, name).offset)
                        for name, _ in declared._fields_]
                self.assertEqual(ours, fields[struct])

    def test_checksum_is_fnv1a(self):
        # FNV-1a's published test vectors (64 bits).
        self.assertEqual(_abi.manifest_checksum(b""), 0xcbf29ce484222325)
        self.assertEqual(_abi.manifest_checksum(b"a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(_abi.manifest_checksum(b"foobar"),
                         0x85944171f73967e8)


if __name__ == "__main__":
    unittest.main()
