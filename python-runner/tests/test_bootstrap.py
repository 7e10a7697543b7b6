"""Bootstrap decisions. The host's interpreters are stand-ins: small scripts placed where Lambda
Stack, the AWS Deep Learning AMI and the GCP Deep Learning VM keep theirs (under a temp root),
printing the probe's answer; pip is a stand-in venv python that records its argv."""

import json
import os
import unittest

from remote_finetune import bootstrap as bs
from tests.helpers import TempDirTest, read


def fake_python(info):
    """A stand-in interpreter: answers the probe with `info` (no torch import happens)."""
    return "#!/bin/sh\necho 'some banner'\necho 'RFT_PROBE %s'\n" % json.dumps(info)


NO_TORCH = {"python": [3, 10, 12], "torch": None, "error": "ModuleNotFoundError"}
CUDA = {"python": [3, 10, 12], "torch": "2.3.1+cu121", "cuda": "12.1", "cuda_available": True, "devices": 1, "capability": [8, 0], "bf16": True, "flash_attn": None}
CUDA_NO_DRIVER = dict(CUDA, cuda_available=False, devices=0)
OLD = dict(CUDA, python=[3, 8, 10])


class Candidates(TempDirTest):
    def host(self, layout):
        for rel, info in layout.items():
            self.write("root" + rel, fake_python(info), mode=0o755)
        return self.path("root")

    def test_order_lambda_dlami_pytorch_env_first_gcp_then_path(self):
        root = self.host({"/usr/bin/python3": NO_TORCH, "/opt/conda/envs/tensorflow/bin/python": CUDA,
                          "/opt/conda/envs/pytorch/bin/python": CUDA, "/opt/conda/bin/python": CUDA,
                          "/usr/local/bin/python3": CUDA, "/opt/pytorch/bin/python": CUDA})
        got = bs.candidate_pythons(root, path_env=os.path.join(root, "usr/local/bin"))
        self.assertEqual([p[len(root):] for p, _ in got], ["/usr/bin/python3", "/opt/pytorch/bin/python", "/opt/conda/envs/pytorch/bin/python",
                                                             "/opt/conda/envs/tensorflow/bin/python", "/opt/conda/bin/python", "/usr/local/bin/python3"])

    def test_lambda_stack_system_python_wins_when_it_has_cuda_torch(self):
        root = self.host({"/usr/bin/python3": CUDA, "/opt/conda/bin/python": CUDA})
        path, info, notes = bs.choose_python(bs.candidate_pythons(root, path_env=""))
        self.assertEqual(path, os.path.join(root, "usr/bin/python3"))
        self.assertEqual(info["torch"], "2.3.1+cu121")

    def test_dlami_conda_env_chosen_over_a_system_python_without_torch(self):
        root = self.host({"/usr/bin/python3": NO_TORCH, "/opt/conda/envs/pytorch/bin/python": CUDA})
        path, _, notes = bs.choose_python(bs.candidate_pythons(root, path_env=""))
        self.assertTrue(path.endswith("/opt/conda/envs/pytorch/bin/python"))
        self.assertIn("no torch", notes[0])

    def test_gcp_dlvm_and_preferring_a_visible_gpu(self):
        root = self.host({"/usr/bin/python3": CUDA_NO_DRIVER, "/opt/conda/bin/python": CUDA})
        path, _, notes = bs.choose_python(bs.candidate_pythons(root, path_env=""))
        self.assertTrue(path.endswith("/opt/conda/bin/python"))
        self.assertIn("no GPU visible", notes[0])

    def test_old_python_and_no_torch_anywhere_is_a_clear_error(self):
        root = self.host({"/usr/bin/python3": OLD, "/opt/conda/bin/python": NO_TORCH})
        with self.assertRaises(bs.BootstrapError) as cm:
            bs.choose_python(bs.candidate_pythons(root, path_env=""))
        self.assertIn("No Python with torch", str(cm.exception))
        self.assertIn("Deep Learning AMI", cm.exception.hint)

    def test_the_current_dlami_pytorch_venv_is_found(self):
        root = self.host({"/usr/bin/python3": NO_TORCH, "/opt/pytorch/bin/python": CUDA})
        path, _, _ = bs.choose_python(bs.candidate_pythons(root, path_env=""))
        self.assertTrue(path.endswith("/opt/pytorch/bin/python"))

    def test_a_venv_on_path_is_not_taken_for_the_system_python_it_links_to(self):
        # A real venv: its bin/python3 is a symlink to the interpreter that made it, as /usr/bin/python3 is here.
        import subprocess
        import sys
        root = self.path("host")
        os.makedirs(os.path.join(root, "usr/bin"))
        os.symlink(os.path.realpath(sys.executable), os.path.join(root, "usr/bin/python3"))
        venv = os.path.join(root, "opt/torch/.venv")
        subprocess.check_call([sys.executable, "-m", "venv", "--without-pip", venv])
        self.assertEqual(os.path.realpath(os.path.join(venv, "bin/python3")), os.path.realpath(os.path.join(root, "usr/bin/python3")))
        got = bs.candidate_pythons(root, path_env=os.path.join(venv, "bin"))
        self.assertEqual([p[len(root):] for p, _ in got], ["/usr/bin/python3", "/opt/torch/.venv/bin/python3"])
        # The same venv reached twice (PATH and RFT_PYTHON) is still one candidate.
        twice = bs.candidate_pythons(root, path_env=os.path.join(venv, "bin"), override=os.path.join(venv, "bin/python"))
        self.assertEqual([o for _, o in twice], ["RFT_PYTHON", "Lambda Stack / system"])

    def test_override_comes_first(self):
        root = self.host({"/usr/bin/python3": CUDA, "/custom/python": CUDA})
        got = bs.candidate_pythons(root, path_env="", override=os.path.join(root, "custom/python"))
        self.assertEqual(got[0][1], "RFT_PYTHON")

    def test_probe_script_runs_on_a_real_interpreter(self):
        import sys
        info = bs.probe_python(sys.executable)
        self.assertEqual(info["python"][:2], list(sys.version_info[:2]))
        self.assertIn("torch", info)


class VenvAndRequirements(TempDirTest):
    def setUp(self):
        super().setUp()
        self.root = self.path("root")
        self.write("root/usr/bin/python3", fake_python(CUDA), mode=0o755)
        self.home = self.path("home")
        self.calls = []

    def runner(self, argv):
        """Stand-in for running venv/pip: records argv; `-m venv` makes the venv's python exist."""
        self.calls.append(argv)
        if argv[1:3] == ["-m", "venv"]:
            self.write(os.path.relpath(os.path.join(argv[-1], "bin", "python"), self.tmp), "#!/bin/sh\n", mode=0o755)
        return 0

    def boot(self, method="qlora", **kw):
        opts = dict(env={"PATH": ""}, root=self.root, runner=self.runner, download=False)
        opts.update(kw)
        return bs.bootstrap(self.home, method, **opts)

    def test_venv_built_once_with_system_site_packages_and_requirements_only_when_changed(self):
        r1 = self.boot()
        venv = os.path.join(self.home, "venv")
        self.assertEqual(self.calls[0], [os.path.join(self.root, "usr/bin/python3"), "-m", "venv", "--clear", "--system-site-packages", venv])
        self.assertEqual(self.calls[1][:4], [os.path.join(venv, "bin", "python"), "-m", "pip", "install"])
        self.assertTrue(self.calls[1][-1].endswith("requirements/locks/hf4-torch2.2to2.5.txt"), "torch 2.3 takes the hf4 lock")
        self.assertEqual(r1["installed"], ["hf4-torch2.2to2.5.txt", "liger.txt"])  # liger-kernel: a CUDA host
        self.assertEqual(r1["lock"], "hf4-torch2.2to2.5.txt")
        self.assertEqual(r1["python"], os.path.join(venv, "bin", "python"))
        self.calls.clear()
        r2 = self.boot()
        self.assertEqual(self.calls, [], "nothing changed, nothing run")
        self.assertEqual(r2["installed"], [])
        self.boot("lora-bf16")  # every built-in method shares the lock
        self.assertEqual(self.calls, [])

    def test_a_changed_requirements_file_is_installed_again(self):
        req_dir = self.path("reqs")
        os.makedirs(req_dir)
        self.write("reqs/base.txt", "transformers==4.46.3\n")
        self.write("reqs/qlora.txt", "-r base.txt\nbitsandbytes==0.44.1\n")
        venv = self.path("venv")
        os.makedirs(venv)
        acts = bs.install_actions(venv, "/usr/bin/python3", [os.path.join(req_dir, "qlora.txt")])
        self.assertEqual(len(acts), 1)
        argv, stamp, digest = acts[0]
        with open(stamp, "w") as f:
            f.write(digest)
        self.assertEqual(bs.install_actions(venv, "/usr/bin/python3", [os.path.join(req_dir, "qlora.txt")]), [])
        self.write("reqs/base.txt", "transformers==4.47.0\n")  # an included file changed
        self.assertEqual(len(bs.install_actions(venv, "/usr/bin/python3", [os.path.join(req_dir, "qlora.txt")])), 1)
        self.assertEqual(len(bs.install_actions(venv, "/opt/conda/bin/python", [os.path.join(req_dir, "qlora.txt")])), 1)

    def test_a_new_base_interpreter_rebuilds_the_venv(self):
        self.boot()
        self.write("root/opt/conda/envs/pytorch/bin/python", fake_python(CUDA), mode=0o755)
        self.write("root/usr/bin/python3", fake_python(NO_TORCH), mode=0o755)
        self.calls.clear()
        self.boot()
        self.assertEqual(self.calls[0][1:4], ["-m", "venv", "--clear"])
        self.assertTrue(self.calls[0][0].endswith("envs/pytorch/bin/python"))

    def test_a_venv_made_from_a_venv_sees_its_parent_packages(self):
        parent_site = "/opt/pytorch/lib/python3.12/site-packages"
        self.write("root/usr/bin/python3", fake_python(dict(CUDA, python=[3, 12, 3], venv=True, site_packages=[parent_site])), mode=0o755)
        r = self.boot()
        pth = os.path.join(self.home, "venv", "lib", "python3.12", "site-packages", "_rft_parent_venv.pth")
        self.assertEqual(read(pth), parent_site + "\n")
        self.assertIn("parent venv", " ".join(r["notes"]))
        self.write("root/usr/bin/python3", fake_python(CUDA), mode=0o755)
        self.assertIsNone(bs.parent_site_pth(self.path("v2"), CUDA), "a plain interpreter needs no .pth")

    def test_lock_by_torch_and_cuda_and_a_clear_refusal(self):
        lock = lambda **kw: os.path.basename(bs.choose_lock(dict(CUDA, **kw)))  # noqa: E731
        self.assertEqual(lock(torch="2.9.1+cu128", cuda="12.8"), "hf5-torch2.6plus.txt")
        self.assertEqual(lock(torch="2.13.0+cpu", cuda=None), "hf5-torch2.6plus.txt")
        self.assertEqual(lock(torch="2.6.0", cuda="12.4"), "hf5-torch2.6plus.txt")
        self.assertEqual(lock(torch="2.5.1+cu121", cuda="12.1"), "hf4-torch2.2to2.5.txt")
        self.assertEqual(lock(torch="2.2.0", cuda="11.8"), "hf4-torch2.2to2.5.txt")
        for bad in (dict(torch="2.1.2+cu118", cuda="11.8"), dict(torch="1.13.1", cuda="11.7"), dict(torch="2.4.0", cuda="10.2"),
                    dict(torch="3.0.0", cuda="12.8"), dict(torch="2.4.0", cuda="11.7")):
            with self.assertRaises(bs.BootstrapError) as cm:
                bs.choose_lock(dict(CUDA, **bad))
            self.assertIn("not a combination the runner supports", str(cm.exception))
            self.assertIn("torch 2.6 or newer", cm.exception.hint)
            self.assertIn("torch 2.2-2.5", cm.exception.hint)
        self.assertEqual(os.path.basename(bs.choose_lock(dict(CUDA, torch="2.1.0"), override="hf5-torch2.6plus")), "hf5-torch2.6plus.txt")
        with self.assertRaises(bs.BootstrapError):
            bs.choose_lock(CUDA, override="../../etc/passwd")

    def test_predownload_runs_under_the_venv_interpreter(self):
        seen = []

        def run_json(argv, env):
            seen.append((argv, env.get("PYTHONPATH")))
            return {"notes": ["model x cached"]}

        r = self.boot(spec={"model": {"id": "org/m"}}, run_dir="/rd", download=True, run_json=run_json)
        argv, pythonpath = seen[0]
        self.assertEqual(argv[0], os.path.join(self.home, "venv", "bin", "python"), "downloaded by the bootstrap's own interpreter")
        self.assertEqual(argv[1:5], ["-m", "remote_finetune", "predownload", "--run-dir"])
        self.assertTrue(pythonpath.endswith("python-runner"))
        self.assertIn("model x cached", r["notes"])
        refusing = lambda argv, env: {"error": "model org/m is a gated repository", "hint": "accept", "signature": "gated-repo"}  # noqa: E731
        with self.assertRaises(bs.BootstrapError) as cm:
            self.boot(spec={"model": {"id": "org/m"}}, run_dir="/rd", download=True, run_json=refusing)
        self.assertEqual(cm.exception.signature, "gated-repo")

    def test_optional_extras(self):
        self.boot("lora-bf16", spec={"launcher": {"deepspeed": "ds_config.json"}}, flash_attn=True, env={"PATH": "", "WANDB_API_KEY": "k" * 40})
        self.assertEqual(self.installed_names(), ["hf4-torch2.2to2.5.txt", "wandb.txt", "deepspeed.txt", "liger.txt", "flash_attn-2.7.4.post1%2Bcu12torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl"])
        # FlashAttention-2 from the release wheel for this torch/CUDA/Python, never compiled on the host.
        self.assertEqual(self.calls[-1][-3:], ["--no-deps", "--only-binary=:all:", bs.FLASH_ATTN_RELEASES + "/v2.7.4.post1/flash_attn-2.7.4.post1%2Bcu12torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl"])
        self.assertFalse(bs.want_flash_attn("qlora", CUDA), "never 4-bit with FlashAttention-2")
        self.assertFalse(bs.want_flash_attn("lora-bf16", dict(CUDA, capability=[7, 5])), "T4 has no FA2")

    def installed_names(self):
        return [os.path.basename(c[-1]) if c[-1].endswith((".txt", ".whl")) else os.path.basename(c[-2]) for c in self.calls[1:]]

    def test_unsloth_backend_installs_unsloth_without_its_pins_and_no_liger(self):
        self.boot("qlora", spec={"trainer": {"backend": "unsloth"}})
        self.assertEqual(self.installed_names(), ["hf4-torch2.2to2.5.txt", "unsloth.txt"])  # Liger's kernels are replaced by Unsloth's
        argv = self.calls[-1]
        self.assertEqual(argv[argv.index("-r") - 1], "--no-deps", "Unsloth's own pins (xformers, trl<=1.15, datasets<5) would replace the lock's")
        self.assertFalse(bs.want_unsloth("qlora", {"devices": []}, {"trainer": {"backend": "unsloth"}}), "no CUDA GPU: never installed")
        self.assertFalse(bs.want_unsloth("full", CUDA, {"trainer": {"backend": "unsloth"}}), "a full fine-tune is refused, not installed for")
        self.assertFalse(bs.want_unsloth("qlora", CUDA, {}), "the built-in backend never installs it")

    def test_dpo_installs_the_lock_and_flash_attn_as_its_16_bit_base_would(self):
        self.boot("dpo", spec={}, flash_attn=True)
        self.assertEqual(self.installed_names(), ["hf4-torch2.2to2.5.txt", "liger.txt", "flash_attn-2.7.4.post1%2Bcu12torch2.3cxx11abiFALSE-cp310-cp310-linux_x86_64.whl"])

    def test_orpo_on_a_4_bit_base_installs_the_lock_without_flash_attn(self):
        self.boot("orpo", spec={"preference": {"base_method": "qlora"}}, flash_attn=True)
        self.assertEqual(self.installed_names(), ["hf4-torch2.2to2.5.txt", "liger.txt"])

    def test_report_to_tensorboard_and_mlflow_install_their_extras_pinned_by_the_lock(self):
        self.boot("qlora", spec={"trainer": {"report_to": ["tensorboard", "mlflow"]}})
        extras = [c for c in self.calls[1:] if c[-1].endswith(("tensorboard.txt", "mlflow.txt"))]
        self.assertEqual([os.path.basename(c[-1]) for c in extras], ["tensorboard.txt", "mlflow.txt"])
        for argv in extras:
            constraints = argv[argv.index("-c") + 1]
            self.assertTrue(constraints.endswith("requirements/locks/tracking/hf4-torch2.2to2.5.txt"), constraints)
            self.assertIn("tensorboard==", read(constraints))
        self.calls.clear()
        self.boot("qlora", spec={"trainer": {"report_to": ["none"]}})
        self.assertFalse([c for c in self.calls if c[-1].endswith(("tensorboard.txt", "mlflow.txt"))], "report_to none installs no tracker")

    def test_every_lock_has_tracking_constraints_covering_the_extras(self):
        for name, _, _ in bs.LOCK_FAMILIES:
            pins = dict(line.split("==") for line in read(os.path.join(bs.LOCKS_DIR, "tracking", name + ".txt")).splitlines() if "==" in line)
            lock = dict(line.split("==") for line in read(os.path.join(bs.LOCKS_DIR, name + ".txt")).splitlines() if "==" in line)
            for extra in ("tensorboard", "mlflow"):
                top = [line.split("==") for line in read(os.path.join(bs.REQUIREMENTS_DIR, extra + ".txt")).splitlines() if "==" in line]
                for pkg, ver in top:
                    self.assertEqual(pins.get(pkg), ver, "%s pins %s as %s.txt does" % (name, pkg, extra))
            clash = {k: (v, lock[k]) for k, v in pins.items() if k in lock and lock[k] != v}
            self.assertEqual(clash, {}, "constraints agree with the lock %s" % name)

    def test_own_script_only_picks_the_interpreter(self):
        r = self.boot("own-script")
        self.assertEqual(self.calls, [])
        self.assertEqual(r["python"], os.path.join(self.root, "usr/bin/python3"))

    def test_shipped_requirement_files_are_pinned(self):
        files = [os.path.join(d, n) for d, _, names in os.walk(bs.REQUIREMENTS_DIR) for n in names]
        self.assertGreaterEqual(len([f for f in files if "locks" in f]), 2)
        for name in files:
            for line in read(name).splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "-r")):
                    self.assertRegex(line, r"^[A-Za-z0-9_.\-]+==[0-9][\w.]*$", name)


class GatedRepo(Exception):
    pass


class Response:
    def __init__(self, status):
        self.status_code = status


class Predownload(TempDirTest):
    SPEC = {"model": {"id": "meta-llama/Llama-3.1-8B", "revision": "main"}, "data": {"train": "data/train.jsonl", "eval": "tatsu-lab/alpaca"}}

    def test_model_and_hub_dataset_downloaded_with_token_local_data_checked(self):
        self.write("work/data/train.jsonl", "{}\n")
        calls = []
        notes = bs.predownload(self.SPEC, self.path("work"), {"HF_TOKEN": "hf_tok_123456", "HF_HOME": "/cache/hf"},
                               lambda **kw: calls.append(kw) or "/cache/hf/x")
        self.assertEqual(calls[0]["repo_id"], "meta-llama/Llama-3.1-8B")
        self.assertEqual(calls[0]["token"], "hf_tok_123456")
        self.assertEqual(calls[0]["revision"], "main")
        self.assertIn("original/*", calls[0]["ignore_patterns"])
        self.assertEqual((calls[1]["repo_id"], calls[1]["repo_type"]), ("tatsu-lab/alpaca", "dataset"))
        self.assertIn("HF_HOME /cache/hf", notes[-1])
        self.assertFalse(any("hf_tok_123456" in n for n in notes))

    def test_missing_local_dataset(self):
        with self.assertRaises(bs.BootstrapError) as cm:
            bs.predownload(self.SPEC, self.path("work"), {}, lambda **kw: "/x")
        self.assertIn("data/train.jsonl does not exist", str(cm.exception))

    def test_gated_repo_message_says_what_to_do_without_the_token(self):
        self.write("work/data/train.jsonl", "{}\n")
        GatedRepoError = type("GatedRepoError", (Exception,), {})

        def refuse(**kw):
            e = GatedRepoError("401 Client Error. Cannot access gated repo for url ... token hf_tok_123456")
            e.response = Response(401)
            raise e

        for env, says in (({"HF_TOKEN": "hf_tok_123456"}, "HF_TOKEN is set"), ({}, "HF_TOKEN is not set")):
            with self.assertRaises(bs.BootstrapError) as cm:
                bs.predownload(self.SPEC, self.path("work"), env, refuse)
            e = cm.exception
            self.assertEqual(e.signature, "gated-repo")
            self.assertIn("gated repository", str(e))
            self.assertIn("https://huggingface.co/meta-llama/Llama-3.1-8B", e.hint)
            self.assertIn(says, e.hint)
            self.assertNotIn("hf_tok_123456", str(e) + e.hint)

    def test_403_from_plain_http_errors_is_gated_too(self):
        e = Exception("forbidden")
        e.response = Response(403)
        self.assertEqual(bs.explain_hub_error(e, "org/m", "model", True).signature, "gated-repo")
        nf = type("RepositoryNotFoundError", (Exception,), {})("x")
        self.assertIn("not found", str(bs.explain_hub_error(nf, "org/m", "model", True)))


if __name__ == "__main__":
    unittest.main()
