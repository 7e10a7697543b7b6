// RFT609: a .env line that points a library's credentials or data at a server the workspace chose. The file is
// workspace content; the person sees the host here, in the CLI, and again in the Start Training confirmation,
// which sends no stored token there without their approval.
import type { ConfigDiagnostic } from './types';
import { redirectsOf } from './endpointVariables';
import type { EndpointRedirect } from './endpointVariables';

function sentence(r: EndpointRedirect, hosts: string): string {
  const points = `${r.variable} points ${r.what} at ${hosts}`;
  if (r.carries === 'none')
    return `${points}: a run started from this workspace reports there, not where your own settings say. Remove the line unless you run or trust that server.`;
  const token = r.carries === 'hf' ? 'Hugging Face token' : r.carries === 'wandb' ? 'W&B API key' : 'tokens (HF_TOKEN, WANDB_API_KEY)';
  return `${points}: a run started from this workspace would hand your stored ${token} to it. Start Training asks before a stored token goes to a host you have not approved; remove the line unless you run or trust that server.`;
}

/** The parts of dotenv.ts's EnvEntry read here (that module calls this one). */
interface EnvEntry {
  readonly key: string;
  readonly value: string;
  readonly valueStart: number;
  readonly valueEnd: number;
}

/** One warning per redirecting variable (its last value, the one the env file gets), on that value. */
export function endpointDiagnostics(entries: readonly EnvEntry[]): ConfigDiagnostic[] {
  const last = new Map<string, EnvEntry>();
  for (const e of entries) last.set(e.key, e);
  const out: ConfigDiagnostic[] = [];
  for (const e of last.values()) {
    const rs = redirectsOf(e.key, e.value);
    if (rs.length === 0) continue;
    out.push({
      start: e.valueStart,
      end: Math.max(e.valueEnd, e.valueStart + 1),
      severity: 'warning',
      code: 'RFT609',
      message: sentence(rs[0]!, rs.map((r) => r.host).join(', ')),
    });
  }
  return out;
}
