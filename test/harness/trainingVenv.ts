// The Python a GPU image would ship, for the loopback host of the e2e suite and the demo: the cached venv with
// the CPU build of torch and the runner's newest lock (scripts/ensure-training-venv.sh builds it once, outside
// the clone). The host's sessions get it as RFT_PYTHON, which the runner's bootstrap tries first.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './codeServer';

export const NEWEST_LOCK = 'hf5-torch2.6plus';

/** The venv's python, building the venv first when it is not cached (minutes, once). */
export function trainingPython(lock = NEWEST_LOCK): string {
  const out = execFileSync('bash', [join(REPO_ROOT, 'scripts/ensure-training-venv.sh'), lock], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return join(out.trim().split('\n').pop()!, 'bin/python');
}

/** A tiny Llama-shaped model with random weights and a locally trained tokenizer in `dir` (no hub access). */
export function buildTinyModel(python: string, dir: string): void {
  execFileSync(python, ['-m', 'tests_training.tiny', dir, 'llama'], { cwd: join(REPO_ROOT, 'python-runner'), stdio: ['ignore', 'pipe', 'inherit'] });
}

/** The script that saves a real peft LoRA adapter with random, non-zero weights for a base model (argv: base, out). */
export const RANDOM_ADAPTER_SCRIPT = `import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from peft import LoraConfig, get_peft_model
base, out = sys.argv[1], sys.argv[2]
torch.manual_seed(1)
model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                       LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
model.save_pretrained(out)
AutoTokenizer.from_pretrained(base).save_pretrained(out)
print("saved the adapter to", out, flush=True)
`;

/** A real LoRA adapter with random weights on the tiny model in `base`, saved to `out`. */
export function buildRandomAdapter(python: string, base: string, out: string): void {
  execFileSync(python, ['-c', RANDOM_ADAPTER_SCRIPT, base, out], { stdio: ['ignore', 'pipe', 'inherit'] });
}
