"""Issue 13.5 on the CPU: `bash scripts/smoke-gpu.sh --cpu-dry-run` trains QLoRA, BF16 LoRA and full fine-tuning
through the real runner on a two-layer shape (the pipeline a GPU machine runs, nvidia-smi the suites' stand-in), and
every figure of its JSON is checked. When .gpu-wheels is packed for this Python, the GPU machine's install path runs
too: a venv built as the bootstrap builds it on a Python that lacks datasets, trl and bitsandbytes, those installed
from the wheels with pip --no-index, then a run.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest

from tests_training.gpu_scripts import REPO, SKIP, Figures, run

# Missing on the GPU image, so packed as wheels (with their own packages' folders and dist-infos).
LACKING = ("datasets", "trl", "bitsandbytes", "dill", "multiprocess", "_multiprocess")


@unittest.skipIf(SKIP is not None, "GPU scripts: %s" % SKIP)
class SmokeDryRun(Figures):
    def test_smoke_trains_qlora_lora_and_full_and_records_every_figure(self):
        tmp = tempfile.mkdtemp(prefix="rft-smoke-dry-")
        self.addCleanup(shutil.rmtree, tmp, True)
        rc, out = run(["bash", "scripts/smoke-gpu.sh", "--cpu-dry-run", "--work", os.path.join(tmp, "w"), "--out-dir", os.path.join(tmp, "out")],
                      {"RFT_GPU_PYTHON": sys.executable})
        self.assertEqual(rc, 0, out[-6000:])
        files = glob.glob(os.path.join(tmp, "out", "*-cpu-dry-run.json"))
        self.assertEqual(len(files), 1, out[-3000:])
        with open(files[0], encoding="utf-8") as f:
            doc = json.load(f)
        import torch
        self.assertEqual((doc["kind"], doc["dry_run"], doc["model"]), ("gpu-smoke", True, "tiny-llama"))
        self.assertEqual(doc["host"]["torch"], torch.__version__)
        self.assertTrue(doc["host"]["nvidia_smi_source"].startswith("stand-in"))
        # bitsandbytes 0.48+ quantises on the CPU, so the dry run trains QLoRA too.
        self.assertEqual([r["method"] for r in doc["runs"]], ["qlora", "lora-bf16", "full"])
        self.assertEqual(doc["skipped"], [])
        for rec in doc["runs"]:
            with self.subTest(method=rec["method"]):
                self.assert_run_figures(rec, 10, 2 * 64)
        with open(os.path.join(tmp, "w", "home", ".remote-finetune", "runs", "smoke-qlora", "output.log"), encoding="utf-8") as f:
            self.assertIn("(qlora, attn_implementation=sdpa", f.read())

    def test_without_a_gpu_it_says_so_in_one_line(self):
        tmp = tempfile.mkdtemp(prefix="rft-smoke-nogpu-")
        self.addCleanup(shutil.rmtree, tmp, True)
        rc, out = run([sys.executable, "bench/gpu/smoke.py", "--work", tmp], {})
        self.assertEqual(rc, 3, out)
        self.assertEqual(len(out.strip().splitlines()), 1, out)
        self.assertRegex(out, r"^smoke: no CUDA GPU visible to torch .*--cpu-dry-run")


@unittest.skipIf(SKIP is not None, "GPU scripts: %s" % SKIP)
class InstallFromPackedWheels(Figures):
    def test_a_python_without_datasets_trl_bitsandbytes_gets_them_from_the_wheels_and_trains(self):
        version = "%d.%d" % sys.version_info[:2]
        req = os.path.join(REPO, ".gpu-wheels", "requirements-cp%d%d.txt" % sys.version_info[:2])
        if not os.path.isfile(req):
            self.skipTest("no .gpu-wheels packed for Python %s: `bash scripts/smoke-gpu.sh pack --python-version %s` where pip "
                          "can download, and the GPU machine's install path is tested here too" % (version, version))
        tmp = tempfile.mkdtemp(prefix="rft-install-")
        self.addCleanup(shutil.rmtree, tmp, True)
        image = self.image_python(os.path.join(tmp, "image"))
        rc, out = run(["bash", "scripts/smoke-gpu.sh", "--cpu-dry-run", "--methods", "lora-bf16", "--work", os.path.join(tmp, "w"),
                       "--out-dir", os.path.join(tmp, "out")], {"RFT_PYTHON": image, "RFT_GPU_WORK": os.path.join(tmp, "w")})
        self.assertEqual(rc, 0, out[-6000:])
        with open(req, encoding="utf-8") as f:
            pins = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        installed = next((l for l in out.splitlines() if l.startswith("Successfully installed")), "")
        for pin in pins:
            self.assertIn(pin.replace("==", "-"), installed, out[-3000:])
        self.assertIn("created venv %s" % os.path.join(tmp, "w", "venv"), out)
        with open(glob.glob(os.path.join(tmp, "out", "*.json"))[0], encoding="utf-8") as f:
            doc = json.load(f)
        self.assertTrue(doc["host"]["datasets"] and doc["host"]["trl"] and doc["host"]["bitsandbytes"])
        self.assert_run_figures(doc["runs"][0], 10, 2 * 64)

    def image_python(self, path: str) -> str:
        """A stand-in for the GPU image's Python: a venv seeing this one's packages (torch, transformers, peft, accelerate,
        pandas, pyarrow, ...) except those the image lacks. Its setuptools is this venv's, as an image's satisfies its torch."""
        base = getattr(sys, "_base_executable", None) or os.path.realpath(sys.executable)
        subprocess.run([base, "-m", "venv", path], check=True)
        mine = sysconfig.get_paths()["purelib"]
        site = subprocess.run([os.path.join(path, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
        for name in os.listdir(site):
            if name.startswith("setuptools"):
                shutil.rmtree(os.path.join(site, name), ignore_errors=True)
        own = set(os.listdir(site))
        for name in os.listdir(mine):
            stem = name.split("-")[0].split(".")[0].lower()
            if stem in LACKING or name in own or name.startswith(("pip", "_distutils_hack", "distutils-precedence")):
                continue
            os.symlink(os.path.join(mine, name), os.path.join(site, name))
        py = os.path.join(path, "bin", "python")
        check = subprocess.run([py, "-c", "import torch, transformers, peft\ntry:\n import datasets\nexcept ImportError:\n print('no datasets')"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(check.stdout.strip(), "no datasets", check.stdout)
        return py


if __name__ == "__main__":
    unittest.main()
