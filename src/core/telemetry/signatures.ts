// Known-failure signatures, read from the same data file as python-runner
// (python-runner/remote_finetune/signatures.json; esbuild inlines it), so the log panel and the
// runner recognise exactly the same lines. Tests on both sides run over test/fixtures/signatures.
import signaturesData from '../../../python-runner/remote_finetune/signatures.json';

export interface FailureSignature {
  readonly id: string;
  readonly title: string;
  readonly hint: string;
  readonly regex: RegExp;
  /** 'warning': the run goes on (e.g. W&B refused the key); shown, but not as the run's failure. */
  readonly severity: 'error' | 'warning';
}

/** Lines the runner prints itself: they name failures (bf16, flash-attn) in warnings without being them. */
const OWN_PREFIX = '[remote-finetune] ';

export interface SignatureMatch {
  readonly signature: FailureSignature;
  /** Offsets of the matched text within the line, for highlighting. */
  readonly start: number;
  readonly end: number;
}

interface RawSignature {
  readonly id: string;
  readonly regex: string;
  readonly title: string;
  readonly hint: string;
  readonly severity?: string;
}

interface RawSignatureFile {
  readonly flags?: string;
  readonly signatures: readonly RawSignature[];
}

/** Compiles a signature file; a pattern JavaScript cannot compile is left out rather than thrown. */
export function compileSignatures(data: RawSignatureFile): FailureSignature[] {
  const flags = (data.flags ?? '').includes('i') ? 'i' : '';
  const out: FailureSignature[] = [];
  for (const s of data.signatures) {
    try {
      out.push({ id: s.id, title: s.title, hint: s.hint, regex: new RegExp(s.regex, flags), severity: s.severity === 'warning' ? 'warning' : 'error' });
    } catch {
      // The shared-fixture test fails on this, so it never ships; at runtime one bad entry must not hide the others.
    }
  }
  return out;
}

export const FAILURE_SIGNATURES: readonly FailureSignature[] = compileSignatures(signaturesData as RawSignatureFile);

/** The first signature (in file order) that matches one output line, or undefined. */
export function matchSignature(line: string, signatures: readonly FailureSignature[] = FAILURE_SIGNATURES): SignatureMatch | undefined {
  if (line.trimStart().startsWith(OWN_PREFIX)) return undefined;
  for (const signature of signatures) {
    const m = signature.regex.exec(line);
    if (m) return { signature, start: m.index, end: m.index + m[0].length };
  }
  return undefined;
}

export function signatureById(id: string, signatures: readonly FailureSignature[] = FAILURE_SIGNATURES): FailureSignature | undefined {
  return signatures.find((s) => s.id === id);
}
