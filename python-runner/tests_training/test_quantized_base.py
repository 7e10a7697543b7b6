"""QLoRA's base model keeps the dtypes it was loaded in (issue 34: the built-in trainer was 0.84x plain TRL SFT on an
H200, 2.92 s against 2.42 s a step, with 11.9 GB against 8.1 GB: peft's prepare_model_for_kbit_training had cast the
embeddings, the head and the norms to fp32, so the residual stream ran in fp32).

The oracle is the model as from_pretrained loads it, which is what TRL 1.x's SFTTrainer trains (it no longer calls
prepare_model_for_kbit_training): the runner's load_model, on the real transformers, peft and bitsandbytes (CPU 4-bit
since bitsandbytes 0.48), may add adapters and freeze, but must not change a base parameter's dtype."""

import os
import shutil
import tempfile
import unittest

from remote_finetune import trainer
from tests_training import test_training as tt


class QuantizedBaseDtypes(unittest.TestCase):
    def test_load_model_keeps_every_base_parameter_in_its_loaded_dtype(self):
        import bitsandbytes  # noqa: F401  (both training venvs have it)
        import torch
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig

        model_dir = tt.tiny_model("llama")
        quant = {"load_in_4bit": True, "quant_type": "nf4", "double_quant": True, "compute_dtype": "bfloat16"}
        spec = tt.base_spec(model_dir, method="qlora", quantization=quant)
        tmp = tempfile.mkdtemp(prefix="rft-qbase-")
        self.addCleanup(shutil.rmtree, tmp, True)
        run = trainer.Run(os.path.join(tmp, "run"), tmp)
        os.makedirs(run.run_dir)
        tokenizer = trainer.load_tokenizer(spec)
        model, _attn = trainer.load_model(spec, tokenizer, run, None)

        bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                 bnb_4bit_compute_dtype=torch.bfloat16)
        ref = AutoModelForCausalLM.from_pretrained(model_dir, **{tt._dtype_name(): torch.bfloat16}, quantization_config=bnb,
                                                   device_map={"": "cpu"}, attn_implementation="sdpa")
        loaded = {n: p.dtype for n, p in ref.named_parameters()}
        ours = {n.replace("base_model.model.", "", 1).replace(".base_layer", ""): p for n, p in model.named_parameters()}
        base = {n: p for n, p in ours.items() if "lora_" not in n}
        self.assertEqual(sorted(base), sorted(loaded), "the runner's base parameters are not the loaded model's")
        changed = {n: "%s -> %s" % (loaded[n], p.dtype) for n, p in base.items() if p.dtype != loaded[n]}
        self.assertEqual(changed, {}, "load_model changed base parameter dtypes (fp32 upcast): %s" % dict(list(changed.items())[:4]))
        self.assertEqual(ours["model.embed_tokens.weight"].dtype, torch.bfloat16)
        self.assertFalse([n for n, p in base.items() if p.requires_grad], "a base parameter is trainable")
        adapters = {n: p for n, p in ours.items() if "lora_" in n}
        self.assertTrue(adapters and all(p.requires_grad for p in adapters.values()), "the LoRA adapters are not trainable")
        # peft's autocast_adapter_dtype keeps the adapters in fp32, so small optimizer updates are not rounded away.
        self.assertEqual({p.dtype for p in adapters.values()}, {torch.float32})


if __name__ == "__main__":
    unittest.main()
