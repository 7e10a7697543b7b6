import os
import unittest

from remote_finetune import launchers
from remote_finetune.spec import normalise

PY = "/home/ubuntu/.remote-finetune/venvs/rft/bin/python"
RUN = "/home/ubuntu/.remote-finetune/runs/r1"
WD = "/home/ubuntu/work"
ENTRY = launchers.ENTRY_SCRIPT


def spec(**launcher):
    return normalise({"version": 1, "model": {"id": "m"}, "method": "lora-bf16", "launcher": launcher})


def profile(name):
    return os.path.join(launchers.PROFILES_DIR, name + ".yaml")


class BuiltIn(unittest.TestCase):
    def test_plain_python(self):
        self.assertEqual(launchers.builtin_argv(spec(type="python"), RUN, PY, WD),
                         [PY, ENTRY, "train", "--run-dir", RUN])

    def test_accelerate_single_gpu_default(self):
        self.assertEqual(launchers.builtin_argv(spec(type="accelerate"), RUN, PY, WD), [
            "accelerate", "launch", "--config_file", profile("single_gpu"), "--num_processes", "1",
            "--num_machines", "1", "--mixed_precision", "bf16", ENTRY, "train", "--run-dir", RUN])

    def test_accelerate_multi_gpu_default_and_profiles(self):
        argv = launchers.builtin_argv(spec(type="accelerate", num_processes=4), RUN, PY, WD)
        self.assertEqual(argv[2:4], ["--config_file", profile("multi_gpu")])
        for name in ("single_gpu", "multi_gpu", "deepspeed_zero2", "deepspeed_zero3"):
            argv = launchers.builtin_argv(spec(type="accelerate", config_file=name, num_processes=2), RUN, PY, WD)
            self.assertEqual(argv[3], profile(name))
            self.assertTrue(os.path.isfile(argv[3]))

    def test_profiles_say_what_they_are(self):
        z2, z3 = open(profile("deepspeed_zero2")).read(), open(profile("deepspeed_zero3")).read()
        self.assertIn("distributed_type: DEEPSPEED", z2)
        self.assertIn("zero_stage: 2", z2)
        self.assertIn("zero_stage: 3", z3)
        self.assertIn("zero3_save_16bit_model: true", z3)
        self.assertIn("distributed_type: MULTI_GPU", open(profile("multi_gpu")).read())
        self.assertIn('distributed_type: "NO"', open(profile("single_gpu")).read())

    def test_accelerate_user_config_multi_node_fp16(self):
        s = spec(type="accelerate", config_file="configs/deepspeed_zero2.yaml", num_processes=16, num_machines=2,
                 machine_rank=1, main_process_ip="10.0.0.1", main_process_port=29501)
        s["trainer"]["precision"] = "fp16"
        self.assertEqual(launchers.builtin_argv(s, RUN, PY, WD), [
            "accelerate", "launch", "--config_file", WD + "/configs/deepspeed_zero2.yaml", "--num_processes", "16",
            "--num_machines", "2", "--mixed_precision", "fp16", "--machine_rank", "1", "--main_process_ip", "10.0.0.1",
            "--main_process_port", "29501", ENTRY, "train", "--run-dir", RUN])

    def test_torchrun_single_and_multi_node(self):
        self.assertEqual(launchers.builtin_argv(spec(type="torchrun", num_processes=8), RUN, PY, WD), [
            "torchrun", "--standalone", "--nnodes", "1", "--nproc_per_node", "8", ENTRY, "train", "--run-dir", RUN])
        s = spec(type="torchrun", num_processes=16, num_machines=2, machine_rank=0, main_process_ip="10.0.0.1")
        self.assertEqual(launchers.builtin_argv(s, RUN, PY, WD), [
            "torchrun", "--nnodes", "2", "--node_rank", "0", "--nproc_per_node", "8", "--master_addr", "10.0.0.1",
            "--master_port", "29500", ENTRY, "train", "--run-dir", RUN])
        with self.assertRaises(launchers.LaunchError):
            launchers.builtin_argv(spec(type="torchrun", num_processes=3, num_machines=2, main_process_ip="h"), RUN, PY, WD)


class OwnScript(unittest.TestCase):
    def own(self, command, **launcher):
        s = spec(**launcher)
        s["command"] = command
        return launchers.own_script_argv(s, PY, WD)

    def test_python_script_uses_the_chosen_interpreter(self):
        self.assertEqual(self.own('python train_vqa.py --bf16 True --run_name "surgical-vqa-bf16-001"'),
                         [PY, "train_vqa.py", "--bf16", "True", "--run_name", "surgical-vqa-bf16-001"])

    def test_python_script_goes_under_the_spec_launcher(self):
        self.assertEqual(self.own("python3 train.py --x 1", type="accelerate", config_file="deepspeed_zero2", num_processes=4), [
            "accelerate", "launch", "--config_file", profile("deepspeed_zero2"), "--num_processes", "4",
            "--num_machines", "1", "--mixed_precision", "bf16", "train.py", "--x", "1"])
        self.assertEqual(self.own("python -m pkg.train --y", type="torchrun", num_processes=2)[-3:], ["-m", "pkg.train", "--y"])

    def test_python_script_on_each_machine_of_a_multi_node_run(self):
        # What the extension writes into each machine's spec.json (src/core/runs/lifecycle/multiNode.ts specForMachine).
        for rank in (0, 1):
            for kind, want in (("torchrun", ["torchrun", "--nnodes", "2", "--node_rank", str(rank), "--nproc_per_node", "2",
                                             "--master_addr", "10.213.7.1", "--master_port", "40123"]),
                               ("accelerate", ["accelerate", "launch", "--config_file", profile("multi_gpu"), "--num_processes", "4",
                                               "--num_machines", "2", "--mixed_precision", "no", "--machine_rank", str(rank),
                                               "--main_process_ip", "10.213.7.1", "--main_process_port", "40123"])):
                s = normalise({"version": 1, "command": "python fail_rank.py --n 3", "trainer": {"precision": "fp32"},
                               "launcher": {"type": kind, "num_processes": 4, "num_machines": 2, "machine_rank": rank,
                                            "main_process_ip": "10.213.7.1", "main_process_port": 40123}})
                self.assertEqual(launchers.own_script_argv(s, PY, WD), want + ["fail_rank.py", "--n", "3"], (kind, rank))

    def test_a_command_naming_its_launcher_runs_as_written(self):
        self.assertEqual(self.own("accelerate launch scripts/train.py experiment=cloud_scale", type="accelerate"),
                         ["accelerate", "launch", "scripts/train.py", "experiment=cloud_scale"])
        self.assertEqual(self.own("./scripts/train_cloud.sh"), ["./scripts/train_cloud.sh"])

    def test_shell_syntax_goes_to_bash_unchanged(self):
        for cmd in ("CUDA_VISIBLE_DEVICES=0 python train.py", "python a.py && python b.py", "python t.py --out $HOME/x"):
            self.assertEqual(self.own(cmd), ["/bin/bash", "-c", cmd])

    def test_unbalanced_quotes_are_a_launch_error(self):
        with self.assertRaises(launchers.LaunchError):
            self.own('python train.py --name "oops')


if __name__ == "__main__":
    unittest.main()
