// Writes python-runner/remote_finetune/spec_defaults.py from the run-spec schema and its defaults
// (src/core/config/specDefaultsPython.ts). test/unit/config/specDefaults.test.ts fails when the committed file is
// out of date, so the host never trains with defaults the editor did not check.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSpecDefaultsPython } from '../src/core/config/specDefaultsPython';

const file = join(__dirname, '..', 'python-runner', 'remote_finetune', 'spec_defaults.py');
const text = renderSpecDefaultsPython();
writeFileSync(file, text);
console.log(`python-runner/remote_finetune/spec_defaults.py  ${(text.length / 1024).toFixed(1)} KiB`);
