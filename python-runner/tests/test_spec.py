import json
import os
import unittest

from remote_finetune import spec as specmod
from tests.helpers import FIXTURES, TempDirTest

RUNSPEC_DIR = os.path.join(FIXTURES, "runspec")


def fixture_names():
    return sorted(f for f in os.listdir(RUNSPEC_DIR) if f.endswith(".json")) if os.path.isdir(RUNSPEC_DIR) else []


class SharedRunSpecFixtures(unittest.TestCase):
    """test/fixtures/runspec/*.json: the config checker's fixtures (its zod schema checks them too)."""

    def test_fixtures_exist(self):
        self.assertGreaterEqual(len(fixture_names()), 3, "the shared runspec fixtures are missing")

    def test_every_fixture_loads_with_defaults_applied(self):
        for name in fixture_names():
            if name.startswith("invalid"):
                continue
            spec, errs = specmod.load_spec(os.path.join(RUNSPEC_DIR, name))
            self.assertEqual(errs, [], name)
            raw = json.load(open(os.path.join(RUNSPEC_DIR, name)))
            # given values survive, absent ones get the documented default
            for section, values in raw.items():
                if isinstance(values, dict):
                    for k, v in values.items():
                        self.assertEqual(spec[section][k], v, "%s %s.%s" % (name, section, k))
            for k in ("per_device_batch_size", "gradient_accumulation", "logging_steps", "save_steps", "seed"):
                self.assertIn(k, spec["trainer"], name)
            self.assertIn(specmod.mode_of(spec), ("qlora", "lora-bf16", "full", "own-script"))

    def test_modes_of_the_known_fixtures(self):
        names = fixture_names()
        if "bf16_a100_own_script.json" in names:
            s, _ = specmod.load_spec(os.path.join(RUNSPEC_DIR, "bf16_a100_own_script.json"))
            self.assertEqual(specmod.mode_of(s), "own-script")
        if "qlora_t4.json" in names:
            s, _ = specmod.load_spec(os.path.join(RUNSPEC_DIR, "qlora_t4.json"))
            self.assertEqual(specmod.mode_of(s), "qlora")
            self.assertEqual(s["quantization"]["compute_dtype"], "float16")


class Checks(TempDirTest):
    def load(self, obj):
        p = self.write("spec.json", json.dumps(obj) if not isinstance(obj, str) else obj)
        return specmod.load_spec(p)

    def test_problems_are_returned_never_raised(self):
        self.assertIn("not JSON", self.load("{nope")[1][0])
        self.assertIn("cannot read", specmod.load_spec(self.path("missing.json"))[1][0])
        _, errs = self.load({"version": 2, "method": "ppo", "launcher": {"type": "slurm", "num_machines": 2, "machine_rank": 2}})
        joined = "\n".join(errs)
        for frag in ("version", "model.id", "method", "launcher.type", "launcher.machine_rank", "main_process_ip"):
            self.assertIn(frag, joined)
        self.assertEqual(self.load([1])[1], ["(spec): expected an object"])

    def test_command_alone_is_enough(self):
        spec, errs = self.load({"version": 1, "command": "python train.py"})
        self.assertEqual(errs, [])
        self.assertEqual(specmod.mode_of(spec), "own-script")
        self.assertEqual(spec["teardown"]["idle_minutes"], 30)

    def test_eval_strategy_follows_an_eval_set(self):
        spec, _ = self.load({"version": 1, "model": {"id": "m"}, "data": {"train": "a.jsonl", "eval": "b.jsonl"}})
        self.assertEqual(spec["trainer"]["eval_strategy"], "steps")
        spec, _ = self.load({"version": 1, "model": {"id": "m"}, "data": {"train": "a.jsonl"}})
        self.assertEqual(spec["trainer"]["eval_strategy"], "no")


if __name__ == "__main__":
    unittest.main()
