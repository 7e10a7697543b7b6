// The first rows of a local JSONL/JSON training file, read the way the built-in trainer reads them
// (python-runner/remote_finetune/data_formats.py: detect, convert_messages), so a file the run would stop on at
// start is reported while editing: no column the trainer reads, a message without role/content, or a role no chat
// template renders. Only the first rows: the runner checks every row on the host.

import type { DocNode } from '../ast';
import { keyText } from '../ast';

/** A document node as plain data (data.roles is read from the spec's tree). */
export function plainOf(n: DocNode | undefined): unknown {
  if (!n) return undefined;
  if (n.kind === 'scalar') return n.value;
  if (n.kind === 'seq') return n.items.map(plainOf);
  return Object.fromEntries(n.pairs.map((p) => [keyText(p), plainOf(p.value)]));
}

/** ShareGPT's role names and their variants, as data_formats.SHAREGPT_ROLES. */
const KNOWN_ROLES: Readonly<Record<string, string>> = {
  human: 'user',
  user: 'user',
  gpt: 'assistant',
  assistant: 'assistant',
  model: 'assistant',
  chatgpt: 'assistant',
  bard: 'assistant',
  bing: 'assistant',
  system: 'system',
  tool: 'tool',
  function_call: 'assistant',
  observation: 'tool',
  function: 'tool',
  ipython: 'tool',
};
const TARGETS = new Set(['system', 'user', 'assistant', 'tool']);
export const FIRST_ROWS = 20;

export interface RowProblem {
  readonly row: number;
  readonly column?: string;
  readonly message: string;
}

/** data.roles in either form: {dataset role: role} or Axolotl's {role: [dataset roles]}. */
export function roleMap(override: unknown): Map<string, string> {
  const roles = new Map(Object.entries(KNOWN_ROLES));
  if (override && typeof override === 'object' && !Array.isArray(override)) {
    for (const [k, v] of Object.entries(override as Record<string, unknown>)) {
      if (typeof v === 'string') roles.set(k, v);
      else if (Array.isArray(v)) for (const name of v) roles.set(String(name), k);
    }
  }
  return roles;
}

function present(row: Record<string, unknown>, col: string): boolean {
  return row[col] !== undefined && row[col] !== null;
}

function layout(row: Record<string, unknown>, textField: string): string {
  // First, as data_formats.detect: conversational preference rows hold message lists too.
  if (present(row, 'chosen') && present(row, 'rejected')) return 'preference';
  if (Array.isArray(row['messages']) || Array.isArray(row['conversations'])) return 'chat';
  if (present(row, 'prompt') && present(row, 'completion')) return 'prompt_completion';
  if (present(row, 'instruction') && present(row, 'output')) return 'alpaca';
  if (present(row, textField)) return 'text';
  return '';
}

function messageProblem(messages: unknown[], roles: Map<string, string>): string | undefined {
  if (messages.length === 0) return 'no messages (an empty conversation)';
  for (const [i, m] of messages.entries()) {
    if (!m || typeof m !== 'object') return `message ${i + 1} is not an object with role and content`;
    const msg = m as Record<string, unknown>;
    const role = msg['role'] ?? msg['from'];
    const content = msg['content'] ?? msg['value'];
    if (role === undefined || role === null || content === undefined || content === null) {
      return `message ${i + 1} has neither role/content nor from/value`;
    }
    const mapped = roles.get(String(role));
    if (mapped === undefined || !TARGETS.has(mapped)) {
      return `message ${i + 1} has role '${String(role)}', which no chat template renders; map it with data.roles (e.g. roles: {${String(role)}: assistant})`;
    }
  }
  return undefined;
}

/** The rows of a JSONL text (or a JSON array), the last line dropped when the text may be cut short. */
function firstRows(text: string, json: boolean): unknown[] | undefined {
  if (json) {
    try {
      const v: unknown = JSON.parse(text);
      return Array.isArray(v) ? v.slice(0, FIRST_ROWS) : undefined;
    } catch {
      return undefined;
    }
  }
  const rows: unknown[] = [];
  for (const line of text.split('\n')) {
    if (rows.length >= FIRST_ROWS) break;
    if (!line.trim()) continue;
    try {
      rows.push(JSON.parse(line));
    } catch {
      return rows.length ? rows : undefined;
    }
  }
  return rows;
}

/** The first problem the trainer would stop on among the first rows, or undefined (also when unreadable). */
export function firstRowProblem(text: string, opts: { json: boolean; textField: string; roles: unknown; method?: unknown }): RowProblem | undefined {
  const rows = firstRows(text, opts.json);
  if (!rows || rows.length === 0) return undefined;
  const roles = roleMap(opts.roles);
  const first = rows[0];
  if (!first || typeof first !== 'object' || Array.isArray(first)) return undefined;
  const kind = layout(first as Record<string, unknown>, opts.textField);
  if (!kind) {
    const cols = Object.keys(first).sort().join(', ');
    return {
      row: 1,
      message: `has no column the trainer reads (it has ${cols}): expected messages or conversations (chat), prompt + completion, instruction + output (Alpaca), or ${opts.textField} (text; data.text_field names another)`,
    };
  }
  // dpo/orpo read chosen/rejected rows and nothing else; the SFT methods refuse them (trainer._converter).
  const preference = opts.method === 'dpo' || opts.method === 'orpo';
  if (preference && kind !== 'preference') {
    const cols = Object.keys(first).sort().join(', ');
    return {
      row: 1,
      message: `has no chosen and rejected columns (it has ${cols}): method ${String(opts.method)} trains on preference rows (prompt, chosen, rejected)`,
    };
  }
  if (!preference && kind === 'preference')
    return { row: 1, message: 'holds preference rows (chosen and rejected): train them with method dpo or orpo, or give chat or prompt/completion rows' };
  if (kind !== 'chat') return undefined;
  for (const [i, r] of rows.entries()) {
    if (!r || typeof r !== 'object') continue;
    const row = r as Record<string, unknown>;
    const column = Array.isArray(row['messages']) ? 'messages' : 'conversations';
    const msgs = row[column];
    if (!Array.isArray(msgs)) return { row: i + 1, column, message: 'has no conversation, while the first row has one' };
    const why = messageProblem(msgs, roles);
    if (why) return { row: i + 1, column, message: why };
  }
  return undefined;
}
