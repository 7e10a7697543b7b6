"""`python -m tests_training`: the real-library suite, then one JSON line with its counts and the versions."""

import json
import sys
import unittest


def versions():
    out = {}
    for name in ("torch", "transformers", "peft", "trl", "datasets", "accelerate", "bitsandbytes"):
        try:
            out[name] = __import__(name).__version__
        except Exception as e:  # a missing library is reported, and the cases that need it fail
            out[name] = "missing (%s)" % type(e).__name__
    return out


def main():
    suite = unittest.defaultTestLoader.discover("tests_training", top_level_dir=".")
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    for test, why in result.skipped:
        print("skipped %s: %s" % (test.id(), why))
    print("RFT_TRAINING " + json.dumps({"ran": result.testsRun, "failed": bad, "skipped": len(result.skipped), "versions": versions()}))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
