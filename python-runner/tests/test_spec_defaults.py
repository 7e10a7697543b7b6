"""Issue 38.1: the runner trains with the defaults generated from the extension's schema (spec_defaults.py), and
nowhere repeats one of them: a field that has a default is read through the typed RunSpec, not with an inline value.
test/unit/config/specDefaults.test.ts checks that spec_defaults.py is what the schema generates."""

import ast
import glob
import os
import unittest

from remote_finetune import spec, spec_defaults
from remote_finetune.spec import RunSpec, normalise

PACKAGE = os.path.dirname(os.path.abspath(spec.__file__))


def leaves(d, path=()):
    if isinstance(d, dict) and d:
        for k, v in d.items():
            yield from leaves(v, path + (k,))
    else:
        yield path, d


def read(view, path):
    for part in path:
        view = getattr(view, part)
    return view


class SpecDefaultsTest(unittest.TestCase):
    def test_the_runner_uses_the_generated_defaults(self):
        self.assertIs(spec.DEFAULTS, spec_defaults.DEFAULTS)
        self.assertIs(spec.RunSpec, spec_defaults.RunSpec)
        self.assertFalse(os.path.exists(os.path.join(PACKAGE, "defaults.json")), "a second copy of the defaults")

    def test_a_bare_spec_is_normalised_to_every_generated_default(self):
        out = normalise({"version": 1, "model": {"id": "m/x"}})
        for path, value in leaves(spec_defaults.DEFAULTS):
            cur = out
            for part in path:
                cur = cur[part]
            self.assertEqual(cur, value, ".".join(path))

    def test_the_typed_view_reads_each_default_where_the_spec_is_silent_and_the_spec_where_it_speaks(self):
        empty, nulls = RunSpec({}), RunSpec({"trainer": {"precision": None}, "teardown": None})
        for path, value in leaves(spec_defaults.DEFAULTS):
            if path == ("wandb",):
                continue  # a section without field defaults
            self.assertEqual(read(empty, path), value, ".".join(path))
        self.assertEqual(nulls.trainer.precision, "bf16")
        self.assertEqual(nulls.teardown.policy, "terminate")
        given = RunSpec({"trainer": {"precision": "fp16"}, "teardown": {"policy": "keep"}, "lora": "not a mapping"})
        self.assertEqual((given.trainer.precision, given.teardown.policy, given.lora.r), ("fp16", "keep", 16))
        self.assertIsNone(given.model.id)

    def test_teardown_defaults_to_terminate(self):
        # A provisioned instance nobody asked to keep is deleted when its run ends: nothing billed by accident.
        self.assertEqual(spec_defaults.DEFAULTS["teardown"]["policy"], "terminate")
        self.assertEqual(RunSpec(normalise({"version": 1})).teardown.policy, "terminate")

    def test_no_runner_module_repeats_a_generated_default(self):
        """`get(spec, "a.b", value)` for a field with a generated default: read RunSpec(spec).a.b instead."""
        found = []
        for path in sorted(glob.glob(os.path.join(PACKAGE, "*.py"))):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get"
                        and len(node.args) == 3 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                    continue
                section, _, field = node.args[1].value.partition(".")
                defaults = spec_defaults.DEFAULTS.get(section)
                if isinstance(defaults, dict) and field in defaults:
                    found.append("%s:%d %s" % (os.path.basename(path), node.lineno, ast.unparse(node)))
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
