// Try Adapter: a prompt box, temperature, max tokens, Generate and Stop, and the model's answer growing as its
// tokens arrive. Model output is untrusted text: it only ever enters the page as text nodes.
import type { TryFromWebview, TryToWebview, TryViewState, TryWhere } from '../../../src/protocol/tryAdapterMessages';
import { TRY_MAX_NEW_TOKENS, TRY_MAX_PROMPT, TRY_MAX_TEMPERATURE } from '../../../src/protocol/tryAdapterMessages';
import { createBridge } from '../shared/vscodeApi';
import { el } from '../shared/dom';
import './tryAdapter.css';

const bridge = createBridge<TryToWebview, TryFromWebview, TryViewState>();
const saved = bridge.state();
const root = document.getElementById('root') ?? document.body;

interface Exchange {
  readonly id: number;
  readonly root: HTMLElement;
  readonly output: HTMLElement;
  readonly meta: HTMLElement;
  pieces: number;
}

class TryPanel {
  private readonly title = el('h1', { class: 'title' }, 'Try the adapter');
  private readonly where = el(
    'select',
    { id: 'where', 'aria-label': 'Run on' },
    el('option', { value: 'host' }, 'Run host (its venv)'),
    el('option', { value: 'local' }, 'Local CPU'),
  );
  private readonly temperature = el('input', { id: 'temperature', type: 'number', min: '0', max: String(TRY_MAX_TEMPERATURE), step: '0.1', value: '0.7' });
  private readonly maxTokens = el('input', { id: 'max-tokens', type: 'number', min: '1', max: String(TRY_MAX_NEW_TOKENS), step: '1', value: '256' });
  private readonly chat = el('input', { id: 'chat', type: 'checkbox' });
  private readonly prompt = el('textarea', {
    id: 'prompt',
    rows: '5',
    maxlength: String(TRY_MAX_PROMPT),
    placeholder: 'A prompt for the fine-tuned model…',
    'aria-label': 'Prompt',
  });
  private readonly generateBtn = el('button', { id: 'generate', type: 'button' }, 'Generate');
  private readonly stopBtn = el('button', { id: 'stop', type: 'button', class: 'secondary', disabled: '' }, 'Stop');
  private readonly status = el(
    'p',
    { id: 'status', class: 'status', role: 'status' },
    'The model loads on the first prompt and stays loaded for the next ones.',
  );
  private readonly localNote = el('p', { id: 'local-note', class: 'note' });
  private readonly problem = el('p', { id: 'problem', class: 'error-text', role: 'alert' });
  private readonly transcript = el('section', { id: 'transcript', 'aria-label': 'Answers' });
  private nextId = 1;
  private current: Exchange | undefined;
  private readonly exchanges = new Map<number, Exchange>();

  constructor() {
    this.chat.checked = true;
    if (saved) {
      this.where.value = saved.where;
      this.temperature.value = String(saved.temperature);
      this.maxTokens.value = String(saved.maxNewTokens);
      this.chat.checked = saved.chat;
      this.prompt.value = saved.prompt;
    }
    const label = (forId: string, text: string, input: HTMLElement): HTMLElement => el('label', { for: forId }, text, input);
    const controls = el(
      'div',
      { class: 'controls' },
      label('where', 'Run on ', this.where),
      label('temperature', 'Temperature ', this.temperature),
      label('max-tokens', 'Max tokens ', this.maxTokens),
      label('chat', 'Chat template ', this.chat),
    );
    const buttons = el('div', { class: 'buttons' }, this.generateBtn, this.stopBtn);
    root.replaceChildren(el('main', { class: 'try' }, this.title, this.status, controls, this.localNote, this.prompt, buttons, this.problem, this.transcript));
    root.setAttribute('aria-busy', 'false');
    for (const input of [this.where, this.temperature, this.maxTokens, this.chat, this.prompt]) input.addEventListener('change', () => this.save());
    this.prompt.addEventListener('input', () => this.save());
    this.generateBtn.addEventListener('click', () => this.generate());
    this.stopBtn.addEventListener('click', () => this.stop());
    // Ctrl/Cmd+Enter sends, as in chat boxes.
    this.prompt.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.generate();
      }
    });
  }

  private save(): void {
    bridge.saveState({
      where: this.where.value === 'local' ? 'local' : 'host',
      temperature: Number(this.temperature.value),
      maxNewTokens: Number(this.maxTokens.value),
      chat: this.chat.checked,
      prompt: this.prompt.value,
    });
  }

  private generate(): void {
    if (this.current) return;
    const prompt = this.prompt.value;
    const temperature = Number(this.temperature.value);
    const maxNewTokens = Number(this.maxTokens.value);
    if (!prompt.trim()) return this.say('Write a prompt first.');
    if (!Number.isFinite(temperature) || temperature < 0 || temperature > TRY_MAX_TEMPERATURE)
      return this.say(`Temperature is a number from 0 (greedy) to ${TRY_MAX_TEMPERATURE}.`);
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1 || maxNewTokens > TRY_MAX_NEW_TOKENS)
      return this.say(`Max tokens is a whole number from 1 to ${TRY_MAX_NEW_TOKENS}.`);
    this.say('');
    const where: TryWhere = this.where.value === 'local' ? 'local' : 'host';
    const id = this.nextId++;
    const output = el('pre', { class: 'output', 'aria-live': 'polite' });
    const meta = el('p', { class: 'meta' }, `${where === 'local' ? 'local CPU' : 'run host'} · temperature ${temperature} · generating…`);
    const box = el(
      'article',
      { class: 'exchange', 'data-request': String(id), 'data-state': 'generating' },
      el('pre', { class: 'prompt' }, prompt),
      output,
      meta,
    );
    this.transcript.prepend(box);
    const ex: Exchange = { id, root: box, output, meta, pieces: 0 };
    this.exchanges.set(id, ex);
    this.current = ex;
    this.generateBtn.disabled = true;
    this.stopBtn.disabled = false;
    bridge.post({ type: 'generate', requestId: id, where, prompt, temperature, maxNewTokens, chat: this.chat.checked });
  }

  private stop(): void {
    if (this.current) bridge.post({ type: 'stop', requestId: this.current.id });
  }

  private finish(ex: Exchange, state: string, meta: string): void {
    ex.root.setAttribute('data-state', state);
    ex.meta.textContent = meta;
    if (this.current === ex) {
      this.current = undefined;
      this.generateBtn.disabled = false;
      this.stopBtn.disabled = true;
    }
  }

  private say(text: string): void {
    this.problem.textContent = text;
  }

  handle(m: TryToWebview): void {
    switch (m.type) {
      case 'init':
        this.title.textContent = `Try the adapter of ${m.runName}`;
        (this.where.options[0] as HTMLOptionElement).textContent = `Run host ${m.host} (its venv)`;
        (this.where.options[1] as HTMLOptionElement).disabled = m.localUnavailable !== undefined;
        if (m.localUnavailable !== undefined && this.where.value === 'local') this.where.value = 'host';
        this.localNote.textContent = m.localUnavailable ?? '';
        break;
      case 'status':
        this.status.textContent = `${m.where === 'local' ? 'Local CPU' : 'Run host'}: ${m.state === 'loading' ? '' : m.state === 'failed' ? 'failed: ' : 'ready: '}${m.text}`;
        this.status.setAttribute('data-state', m.state);
        break;
      case 'token': {
        const ex = this.exchanges.get(m.requestId);
        if (!ex) return;
        ex.output.append(document.createTextNode(m.text));
        ex.pieces++;
        ex.root.setAttribute('data-pieces', String(ex.pieces));
        break;
      }
      case 'done': {
        const ex = this.exchanges.get(m.requestId);
        if (ex) {
          const rate = m.seconds > 0 ? ` · ${(m.tokens / m.seconds).toFixed(1)} tokens/s` : '';
          this.finish(ex, m.stopped ? 'stopped' : 'done', `${m.tokens} tokens in ${m.seconds.toFixed(2)} s${rate}${m.stopped ? ' · stopped' : ''}`);
        }
        break;
      }
      case 'error': {
        const ex = this.exchanges.get(m.requestId);
        if (ex) this.finish(ex, 'error', 'failed');
        this.say(m.message);
        break;
      }
    }
  }
}

const panel = new TryPanel();
bridge.start((m) => panel.handle(m));
