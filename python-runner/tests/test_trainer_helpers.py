"""Parts of trainer.py that need no torch: the flash-attn check and the token names."""

import os
import sys
import unittest

from remote_finetune import run as runmod
from remote_finetune import trainer
from remote_finetune.spec import hub_token
from tests.helpers import TempDirTest


class FlashAttn(TempDirTest):
    def test_a_flash_attn_that_does_not_import_is_not_used(self):
        # As a flash-attn wheel built for another torch fails: the package exists (find_spec finds it), import raises.
        self.write("libs/flash_attn/__init__.py",
                   "raise ImportError('/x/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n")
        sys.path.insert(0, self.path("libs"))
        try:
            sys.modules.pop("flash_attn", None)
            ok, why = trainer.flash_attn_usable()
        finally:
            sys.path.remove(self.path("libs"))
            sys.modules.pop("flash_attn", None)
        self.assertFalse(ok)
        self.assertIn("undefined symbol", why)

    def test_a_working_flash_attn_is_used(self):
        self.write("libs/flash_attn/__init__.py", "def flash_attn_func(*a, **k):\n    return None\n")
        sys.path.insert(0, self.path("libs"))
        try:
            sys.modules.pop("flash_attn", None)
            self.assertEqual(trainer.flash_attn_usable(), (True, None))
        finally:
            sys.path.remove(self.path("libs"))
            sys.modules.pop("flash_attn", None)


class Tokens(unittest.TestCase):
    def test_the_seeds_token_name_reaches_the_libraries_as_hf_token(self):
        env = runmod.child_environment({"PATH": "/bin"}, {"HUGGINGFACE_TOKEN": "hf_seedname123"}, "/rd", "/usr/bin/python3")
        self.assertEqual(env["HF_TOKEN"], "hf_seedname123")
        env = runmod.child_environment({}, {"HF_TOKEN": "hf_a", "HUGGINGFACE_TOKEN": "hf_b"}, "/rd", "/usr/bin/python3")
        self.assertEqual(env["HF_TOKEN"], "hf_a", "an explicit HF_TOKEN wins")
        self.assertEqual(hub_token({"HUGGING_FACE_HUB_TOKEN": "hf_c"}), "hf_c")
        self.assertIsNone(hub_token({}))


if __name__ == "__main__":
    unittest.main()
