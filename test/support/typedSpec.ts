// Run specs for tests of the helpers that read the typed RunSpec: parsed by the schema itself, so a test never
// hands them a spec no user could start. Version 1 and an SSH target on an A100 unless the test names others.
import { runSpecSchema } from '../../src/core/config/schemas/runSpec';
import type { RunSpec } from '../../src/core/config/runSpecDefaults';

export function typedSpec(parts: Record<string, unknown> = {}): RunSpec {
  const target = { provider: 'ssh', gpu: 'A100-80GB', ...((parts.target as Record<string, unknown> | undefined) ?? {}) };
  return runSpecSchema.parse({ version: 1, ...parts, target });
}
